//go:build wasmtime

package wasmtime

import (
	"encoding/binary"
	"fmt"

	wt "github.com/bytecodealliance/wasmtime-go/v44"
	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/guestout"
	"github.com/wasmsched/wasmsched/host/internal/modshape"
)

// The host implements WASI preview 1 itself rather than use Wasmtime's
// (which opens the host's files, environment and clocks when asked): a
// guest gets what wazero gives it with no filesystem, environment or
// arguments configured — standard output and error into the instance's
// bounded output, an empty standard input, the fake clocks and the seeded
// random source of instance.go — and every other function is a stub
// answering EBADF (there is no file, directory or socket to name) or
// ENOSYS.

// WASI errno values.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoNosys   = 52
	errnoNotsup  = 58
)

// wasiFunc is one WASI function: its parameter types ('i' i32, 'I' i64;
// every one but proc_exit returns an i32 errno) and what it does (nil:
// a stub answering stub).
type wasiFunc struct {
	params string
	impl   func(i *instance, c *wt.Caller, args []wt.Val) (errno int32, trap *wt.Trap)
	stub   int32
}

// wasiFuncs is WASI preview 1, by import name.
var wasiFuncs = map[string]wasiFunc{
	"args_get":                {params: "ii", impl: noArgs},
	"args_sizes_get":          {params: "ii", impl: zeroSizes},
	"environ_get":             {params: "ii", impl: noArgs},
	"environ_sizes_get":       {params: "ii", impl: zeroSizes},
	"clock_res_get":           {params: "ii", impl: clockResGet},
	"clock_time_get":          {params: "iIi", impl: clockTimeGet},
	"fd_advise":               {params: "iIIi", stub: errnoBadf},
	"fd_allocate":             {params: "iII", stub: errnoBadf},
	"fd_close":                {params: "i", impl: fdClose},
	"fd_datasync":             {params: "i", stub: errnoBadf},
	"fd_fdstat_get":           {params: "ii", impl: fdFdstatGet},
	"fd_fdstat_set_flags":     {params: "ii", stub: errnoBadf},
	"fd_fdstat_set_rights":    {params: "iII", stub: errnoBadf},
	"fd_filestat_get":         {params: "ii", stub: errnoBadf},
	"fd_filestat_set_size":    {params: "iI", stub: errnoBadf},
	"fd_filestat_set_times":   {params: "iIIi", stub: errnoBadf},
	"fd_pread":                {params: "iiiIi", stub: errnoBadf},
	"fd_prestat_get":          {params: "ii", stub: errnoBadf},
	"fd_prestat_dir_name":     {params: "iii", stub: errnoBadf},
	"fd_pwrite":               {params: "iiiIi", stub: errnoBadf},
	"fd_read":                 {params: "iiii", impl: fdRead},
	"fd_readdir":              {params: "iiiIi", stub: errnoBadf},
	"fd_renumber":             {params: "ii", stub: errnoBadf},
	"fd_seek":                 {params: "iIii", stub: errnoBadf},
	"fd_sync":                 {params: "i", stub: errnoBadf},
	"fd_tell":                 {params: "ii", stub: errnoBadf},
	"fd_write":                {params: "iiii", impl: fdWrite},
	"path_create_directory":   {params: "iii", stub: errnoBadf},
	"path_filestat_get":       {params: "iiiii", stub: errnoBadf},
	"path_filestat_set_times": {params: "iiiiIIi", stub: errnoBadf},
	"path_link":               {params: "iiiiiii", stub: errnoBadf},
	"path_open":               {params: "iiiiiIIii", stub: errnoBadf},
	"path_readlink":           {params: "iiiiii", stub: errnoBadf},
	"path_remove_directory":   {params: "iii", stub: errnoBadf},
	"path_rename":             {params: "iiiiii", stub: errnoBadf},
	"path_symlink":            {params: "iiiii", stub: errnoBadf},
	"path_unlink_file":        {params: "iii", stub: errnoBadf},
	"poll_oneoff":             {params: "iiii", impl: pollOneoff},
	"proc_exit":               {params: "i", impl: procExit},
	"proc_raise":              {params: "i", stub: errnoNosys},
	"sched_yield":             {params: "", impl: func(*instance, *wt.Caller, []wt.Val) (int32, *wt.Trap) { return errnoSuccess, nil }},
	"random_get":              {params: "ii", impl: randomGet},
	"sock_accept":             {params: "iii", stub: errnoBadf},
	"sock_recv":               {params: "iiiiii", stub: errnoBadf},
	"sock_send":               {params: "iiiii", stub: errnoBadf},
	"sock_shutdown":           {params: "ii", stub: errnoBadf},
}

// newLinker defines WASI and wasmsched.log on an engine, for every
// instance of every module: each function finds its instance (and through
// it the module's logger and bounds) in the store's data.
func newLinker(engine *wt.Engine) (*wt.Linker, error) {
	l := wt.NewLinker(engine)
	for name, f := range wasiFuncs {
		results := []*wt.ValType{wt.NewValType(wt.KindI32)}
		if name == "proc_exit" {
			results = nil
		}
		if err := define(l, modshape.WASIModule, name, f.params, results, f.impl, f.stub); err != nil {
			l.Close()
			return nil, err
		}
	}
	if err := define(l, abi.ImportModule, abi.ImportLog, "iii", nil, hostLog, 0); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// define adds one host function. Every call checks the deadline first, so
// a guest calling the host in a loop is stopped at its next call, and no
// panic crosses back into Wasmtime.
func define(l *wt.Linker, module, name, params string, results []*wt.ValType,
	impl func(*instance, *wt.Caller, []wt.Val) (int32, *wt.Trap), stub int32) error {
	ps := make([]*wt.ValType, len(params))
	for k, p := range params {
		if p == 'I' {
			ps[k] = wt.NewValType(wt.KindI64)
		} else {
			ps[k] = wt.NewValType(wt.KindI32)
		}
	}
	what := module + "." + name
	return l.FuncNew(module, name, wt.NewFuncType(ps, results), func(c *wt.Caller, args []wt.Val) (res []wt.Val, trap *wt.Trap) {
		inst, ok := c.Data().(*instance)
		if !ok {
			return nil, wt.NewTrap("wasmsched: " + what + " called outside an instance")
		}
		defer func() {
			if p := recover(); p != nil {
				inst.backend.log.Error("host function failed", "function", what, "panic", fmt.Sprint(p))
				res, trap = nil, wt.NewTrap("wasmsched: host function "+what+" failed")
			}
		}()
		if inst.expiredNow() {
			return nil, wt.NewTrap("wasmsched: call aborted by the host: deadline passed")
		}
		errno := stub
		if impl != nil {
			if errno, trap = impl(inst, c, args); trap != nil {
				return nil, trap
			}
		}
		if len(results) == 0 {
			return nil, nil
		}
		return []wt.Val{wt.ValI32(errno)}, nil
	})
}

// memory is the instance's linear memory during a host call.
func (i *instance) memory(c *wt.Caller) []byte {
	if i.mem == nil {
		return nil
	}
	return i.mem.UnsafeData(c)
}

func u32(v wt.Val) uint32 { return uint32(v.I32()) }

// putU32 and putU64 write little-endian values into guest memory, false
// when out of range.
func putU32(mem []byte, ptr uint32, v uint32) bool {
	if uint64(ptr)+4 > uint64(len(mem)) {
		return false
	}
	binary.LittleEndian.PutUint32(mem[ptr:], v)
	return true
}

func putU64(mem []byte, ptr uint32, v uint64) bool {
	if uint64(ptr)+8 > uint64(len(mem)) {
		return false
	}
	binary.LittleEndian.PutUint64(mem[ptr:], v)
	return true
}

// noArgs answers args_get and environ_get: there are none to copy.
func noArgs(*instance, *wt.Caller, []wt.Val) (int32, *wt.Trap) { return errnoSuccess, nil }

// zeroSizes answers args_sizes_get and environ_sizes_get: none, 0 bytes.
func zeroSizes(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	mem := i.memory(c)
	if !putU32(mem, u32(args[0]), 0) || !putU32(mem, u32(args[1]), 0) {
		return errnoFault, nil
	}
	return errnoSuccess, nil
}

// Clock ids.
const (
	clockRealtime  = 0
	clockMonotonic = 1
)

func clockResGet(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	var res uint64
	switch u32(args[0]) {
	case clockRealtime:
		res = 1000
	case clockMonotonic:
		res = 1
	default:
		return errnoInval, nil
	}
	if !putU64(i.memory(c), u32(args[1]), res) {
		return errnoFault, nil
	}
	return errnoSuccess, nil
}

func clockTimeGet(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	var t int64
	switch u32(args[0]) {
	case clockRealtime:
		i.walltime += fakeTick
		t = i.walltime
	case clockMonotonic:
		i.nanotime += fakeTick
		t = i.nanotime
	default:
		return errnoInval, nil
	}
	if !putU64(i.memory(c), u32(args[2]), uint64(t)) {
		return errnoFault, nil
	}
	return errnoSuccess, nil
}

func randomGet(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	mem := i.memory(c)
	ptr, n := u32(args[0]), u32(args[1])
	if uint64(ptr)+uint64(n) > uint64(len(mem)) {
		return errnoFault, nil
	}
	i.rand.Read(mem[ptr : ptr+n])
	return errnoSuccess, nil
}

// fdClose lets a guest close its standard streams (nothing happens) and
// nothing else.
func fdClose(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	if u32(args[0]) > 2 {
		return errnoBadf, nil
	}
	return errnoSuccess, nil
}

// fdFdstatGet describes the standard streams as character devices.
func fdFdstatGet(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	const (
		filetypeCharacterDevice = 2
		rightFdRead             = 1 << 1
		rightFdWrite            = 1 << 6
		rightPollFdReadwrite    = 1 << 27
	)
	fd, ptr := u32(args[0]), u32(args[1])
	var rights uint64
	switch fd {
	case 0:
		rights = rightFdRead | rightPollFdReadwrite
	case 1, 2:
		rights = rightFdWrite | rightPollFdReadwrite
	default:
		return errnoBadf, nil
	}
	mem := i.memory(c)
	if uint64(ptr)+24 > uint64(len(mem)) {
		return errnoFault, nil
	}
	stat := mem[ptr : ptr+24]
	clear(stat)
	stat[0] = filetypeCharacterDevice
	binary.LittleEndian.PutUint64(stat[8:], rights)
	return errnoSuccess, nil
}

// fdRead reads nothing from standard input (it is empty).
func fdRead(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	if u32(args[0]) != 0 {
		return errnoBadf, nil
	}
	if !putU32(i.memory(c), u32(args[3]), 0) {
		return errnoFault, nil
	}
	return errnoSuccess, nil
}

// fdWrite sends standard output and error into the instance's bounded
// output, checking the deadline between buffers.
func fdWrite(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	fd, iovs, n, nwritten := u32(args[0]), u32(args[1]), u32(args[2]), u32(args[3])
	stream := guestout.Stdout
	switch fd {
	case 1:
	case 2:
		stream = guestout.Stderr
	default:
		return errnoBadf, nil
	}
	mem := i.memory(c)
	var total uint32
	for k := uint32(0); k < n; k++ {
		off := uint64(iovs) + 8*uint64(k)
		if off+8 > uint64(len(mem)) {
			return errnoFault, nil
		}
		ptr := binary.LittleEndian.Uint32(mem[off:])
		size := binary.LittleEndian.Uint32(mem[off+4:])
		if uint64(ptr)+uint64(size) > uint64(len(mem)) {
			return errnoFault, nil
		}
		if k > 0 && i.expiredNow() {
			return 0, wt.NewTrap("wasmsched: call aborted by the host: deadline passed")
		}
		i.out.Write(stream, mem[ptr:ptr+size])
		total += size
	}
	if !putU32(mem, nwritten, total) {
		return errnoFault, nil
	}
	return errnoSuccess, nil
}

// pollOneoff answers every subscription at once: clocks as elapsed (the
// fake clock does not wait), standard streams as not supported, other
// descriptors as bad.
func pollOneoff(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	const (
		subscriptionSize = 48
		eventSize        = 32
		eventClock       = 0
		eventFdRead      = 1
		eventFdWrite     = 2
	)
	in, out, n, nevents := u32(args[0]), u32(args[1]), u32(args[2]), u32(args[3])
	if n == 0 {
		return errnoInval, nil
	}
	mem := i.memory(c)
	if uint64(in)+uint64(n)*subscriptionSize > uint64(len(mem)) ||
		uint64(out)+uint64(n)*eventSize > uint64(len(mem)) {
		return errnoFault, nil
	}
	for k := uint64(0); k < uint64(n); k++ {
		sub := mem[uint64(in)+k*subscriptionSize:][:subscriptionSize]
		var errno uint16
		switch sub[8] {
		case eventClock:
		case eventFdRead, eventFdWrite:
			if binary.LittleEndian.Uint32(sub[16:]) <= 2 {
				errno = errnoNotsup
			} else {
				errno = errnoBadf
			}
		default:
			return errnoInval, nil
		}
		ev := mem[uint64(out)+k*eventSize:][:eventSize]
		userdata := binary.LittleEndian.Uint64(sub)
		clear(ev)
		binary.LittleEndian.PutUint64(ev, userdata)
		binary.LittleEndian.PutUint16(ev[8:], errno)
		ev[10] = sub[8]
	}
	if !putU32(mem, nevents, n) {
		return errnoFault, nil
	}
	return errnoSuccess, nil
}

// procExit ends the call: the guest exited (Go does on a panic).
func procExit(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	i.exited, i.exitCode = true, u32(args[0])
	return 0, wt.NewTrap(fmt.Sprintf("wasmsched: guest called proc_exit(%d)", i.exitCode))
}

// hostLog implements the wasmsched.log import: the message goes through
// the calling instance's output bounds.
func hostLog(i *instance, c *wt.Caller, args []wt.Val) (int32, *wt.Trap) {
	level, ptr, n := abi.LogLevel(u32(args[0])), u32(args[1]), u32(args[2])
	if n > guestout.MaxLine+1 {
		n = guestout.MaxLine + 1 // one more, so the cut shows
	}
	mem := i.memory(c)
	if uint64(ptr)+uint64(n) > uint64(len(mem)) {
		i.out.Emit(hclog.Warn, "guest log call with out-of-range message", "ptr", ptr, "len", n)
		return 0, nil
	}
	i.out.Log(level, mem[ptr:ptr+n])
	return 0, nil
}
