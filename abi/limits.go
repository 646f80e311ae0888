package abi

// Reply limits. A reply's lists are sized by counts the guest writes, and
// the host's decoded form of an element is bigger than its encoding (a
// one-byte empty string is a 16-byte string header, a one-byte verdict a
// 24-byte struct): a decoder that trusted a count would let a reply of
// 64 MiB make the host allocate gigabytes. So every list of a reply the
// host decodes is bounded, before anything is allocated for it, by what
// the request allows (one answer per node sent, no more pods than were
// offered, no more verdicts than candidates) or, where the request sets
// no bound (reasons, manifest entries), by one of the constants below. A
// count over its bound is a decode error, a *LimitError, which the host
// treats as an invalid reply: the call fails and the instance is lost.
//
// Independently, Decoder.Count refuses a count the remaining input could
// not hold at the element's smallest encoding, so no list of any message
// is allocated bigger than its bytes justify.

// MaxReasons is the most reasons one status may carry (a PreFilter,
// PreScore, Filter entry or SelectVictims answer): kube-scheduler's
// plugins give one or two, NodeResourcesFit one per missing resource.
const MaxReasons = 64

// MaxPlugins is the most plugins a manifest may declare.
const MaxPlugins = 256

// MaxAnnotationKeys is the most annotation keys a manifest may ask for.
const MaxAnnotationKeys = 256

// MaxNarrowedNodes is the most node names a PreFilter reply may narrow
// to: a pod can name nodes that do not exist, so the bound is not the
// cluster's size but the most nodes one Filter call carries (the host's
// batches hold at most 65535 slots).
const MaxNarrowedNodes = 1<<16 - 1

// MaxConditionEffects is the most taint effects an eviction condition
// may list: there are three (NoSchedule, PreferNoSchedule, NoExecute).
const MaxConditionEffects = 3

// LimitError is a reply list whose count is over what its request (or
// the ABI) allows. Its message names the reply, the count and the limit,
// as "eviction threshold reply: 70000 results for 5000 nodes sent".
type LimitError struct {
	// Reply names the reply, as "eviction threshold reply".
	Reply string
	// Where says which part of the reply holds the list ("node slot 3"),
	// or is empty for a top-level list.
	Where string
	// Count is the count the reply wrote.
	Count uint64
	// Items names what the list holds, as "results".
	Items string
	// Limit is the most the list may hold.
	Limit int
	// Of says what Limit counts, as "nodes sent" or "allowed (topN)".
	Of string
	// Offset is where in the reply the count ends.
	Offset int
}

func (e *LimitError) Error() string {
	where := ""
	if e.Where != "" {
		where = e.Where + ": "
	}
	return "abi: " + e.Reply + ": " + where + utoa(e.Count) + " " + e.Items + " for " + Itoa(int64(e.Limit)) + " " + e.Of +
		" (at byte " + Itoa(int64(e.Offset)) + ")"
}

// utoa formats v in decimal (Itoa for counts that may not fit an int64).
func utoa(v uint64) string {
	if v <= 1<<63-1 {
		return Itoa(int64(v))
	}
	return Itoa(int64(v/10)) + string(rune('0'+v%10))
}

// bound is the limit of one reply list and the words that name it in a
// LimitError (see there). A value, not a pointer: decoders build one per
// list on the stack, and the message is put together only on failure.
type bound struct {
	limit int
	reply string
	// where and at say which part of the reply holds the list: where
	// alone (at < 0), or where and the number at ("node slot 3").
	where string
	at    int64
	items string
	of    string
}

// top is the bound of a reply's top-level list.
func top(limit int, reply, items, of string) bound {
	return bound{limit: limit, reply: reply, at: -1, items: items, of: of}
}

// in is b for the list of one part of the reply, named where and at.
func (b bound) in(where string, at int64) bound {
	b.where, b.at = where, at
	return b
}

func (b bound) whereText() string {
	if b.at < 0 {
		return b.where
	}
	return b.where + " " + Itoa(b.at)
}

// countUpTo reads the count of a reply list and refuses, before the
// caller allocates anything for it, a count above b.limit or one the
// remaining input cannot hold at minSize bytes per element.
func (d *Decoder) countUpTo(minSize int, b bound) int {
	return d.checkCount(d.Uvarint(), minSize, b)
}

// u32CountUpTo is countUpTo for a count written as a fixed u32 (filter
// and score replies).
func (d *Decoder) u32CountUpTo(minSize int, b bound) int {
	return d.checkCount(uint64(d.U32()), minSize, b)
}

func (d *Decoder) checkCount(n uint64, minSize int, b bound) int {
	if d.err != nil {
		return 0
	}
	if n > uint64(max(b.limit, 0)) {
		d.Fail(&LimitError{Reply: b.reply, Where: b.whereText(), Count: n, Items: b.items, Limit: b.limit, Of: b.of, Offset: d.off})
		return 0
	}
	if n > uint64(d.Remaining()/max(minSize, 1)) {
		d.failf("list count exceeds input")
		return 0
	}
	return int(n)
}

// stringsUpTo reads a list of strings of at most b.limit; an empty list
// decodes as nil.
func (d *Decoder) stringsUpTo(b bound) []string {
	n := d.countUpTo(1, b)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.String()
	}
	return ss
}

// reasons reads the reasons of a status in reply, at most MaxReasons;
// where and at say whose status it is (see bound).
func (d *Decoder) reasons(reply, where string, at int64) []string {
	return d.stringsUpTo(bound{limit: MaxReasons, reply: reply, where: where, at: at, items: "reasons", of: "allowed (abi.MaxReasons)"})
}
