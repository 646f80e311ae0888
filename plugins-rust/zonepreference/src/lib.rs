//! ZonePreference: a wasmsched policy module written in Rust from
//! docs/ABI.md alone (ABI v1.0, no SDK).
//!
//! Filter rejects nodes without a non-empty `topology.kubernetes.io/zone`
//! label (UnschedulableAndUnresolvable: evicting pods cannot add a label).
//! Score gives 50 points to nodes in the zone named by the `preferredZone`
//! arg, plus up to 50 points for the fraction of the node's allocatable CPU
//! that is not requested (integer arithmetic, so every build agrees).
//!
//! The module keeps a mirror of the nodes (slot -> zone, allocatable CPU,
//! requested CPU) and a what-if view of the cycle (add_pod/remove_pod as
//! CPU deltas per slot, push_state/pop_state as marks in that log).

const ABI_MAJOR: u16 = 1;
const ABI_MINOR: u16 = 0;

const PLUGIN: &str = "ZonePreference";
const ZONE_LABEL: &[u8] = b"topology.kubernetes.io/zone";
const NO_ZONE_REASON: &str = "node(s) had no topology.kubernetes.io/zone label";

// Plugin extension points (Manifest.points bits).
const POINT_FILTER: u64 = 1 << 1;
const POINT_SCORE: u64 = 1 << 3;

// Verdict codes.
const UNSCHEDULABLE_AND_UNRESOLVABLE: u8 = 3;

const ZONE_POINTS: i64 = 50;
const FREE_CPU_POINTS: u64 = 50;
const MAX_STATE_DEPTH: usize = 64;

#[link(wasm_import_module = "wasmsched")]
extern "C" {
    #[link_name = "log"]
    fn host_log(level: i32, ptr: *const u8, len: usize);
}

/// What the mirror keeps of one node.
struct Node {
    zone: Option<Vec<u8>>,
    alloc_cpu: i64,
    req_cpu: i64,
}

struct State {
    input: Vec<u8>,
    output: Vec<u8>,
    initialised: bool,
    in_cycle: bool,
    preferred_zone: Vec<u8>,
    nodes: Vec<Option<Node>>,
    /// add_pod/remove_pod of this cycle: (slot, CPU delta), in order.
    view: Vec<(u32, i64)>,
    /// push_state marks: lengths of `view`.
    marks: Vec<usize>,
}

static mut STATE: State = State {
    input: Vec::new(),
    output: Vec::new(),
    initialised: false,
    in_cycle: false,
    preferred_zone: Vec::new(),
    nodes: Vec::new(),
    view: Vec::new(),
    marks: Vec::new(),
};

fn state() -> &'static mut State {
    // A Wasm instance runs one call at a time and never re-enters.
    unsafe { &mut *std::ptr::addr_of_mut!(STATE) }
}

type R<T> = Result<T, String>;

fn err<T>(parts: &[&str]) -> R<T> {
    Err(parts.concat())
}

#[no_mangle]
pub extern "C" fn wasmsched_abi_version() -> i32 {
    ((ABI_MAJOR as i32) << 16) | ABI_MINOR as i32
}

#[no_mangle]
pub extern "C" fn wasmsched_input(size: i32) -> i32 {
    let s = state();
    let size = size as u32 as usize;
    if s.input.len() < size {
        s.input.resize(size, 0);
    }
    s.input.as_ptr() as i32
}

#[no_mangle]
pub extern "C" fn wasmsched_call(fun: i32, arg: i32, len: i32) -> i64 {
    let s = state();
    let mut out = std::mem::take(&mut s.output);
    out.clear();
    out.push(0);
    let len = len as u32 as usize;
    let res = if len > s.input.len() {
        Err(String::from("input length beyond the input buffer"))
    } else {
        let input = std::mem::take(&mut s.input);
        let r = dispatch(s, fun, arg as u32, &input[..len], &mut out);
        s.input = input;
        r
    };
    if let Err(msg) = res {
        out.clear();
        out.push(1);
        put_str(&mut out, msg.as_bytes());
    }
    s.output = out;
    ((s.output.as_ptr() as u32 as u64) << 32 | s.output.len() as u64) as i64
}

fn dispatch(s: &mut State, fun: i32, arg: u32, input: &[u8], out: &mut Vec<u8>) -> R<()> {
    let mut d = Dec { b: input, p: 0 };
    match fun {
        1 => manifest(out),
        2 => init(s, &mut d),
        3 => sync(s, &mut d),
        4 => {
            if !s.initialised {
                return err(&["cycle before init"]);
            }
            // The pod does not matter to this policy; only the view resets.
            s.view.clear();
            s.marks.clear();
            s.in_cycle = true;
            Ok(())
        }
        5 => plugin(s, arg).and_then(|_| err(&[PLUGIN, " has no PreFilter"])),
        6 => plugin(s, arg).and_then(|_| filter(s, &mut d, out)),
        7 => plugin(s, arg).and_then(|_| err(&[PLUGIN, " has no PreScore"])),
        8 => plugin(s, arg).and_then(|_| score(s, &mut d, out)),
        9 => {
            in_cycle(s)?;
            if s.marks.len() >= MAX_STATE_DEPTH {
                return err(&["push_state nested deeper than 64"]);
            }
            s.marks.push(s.view.len());
            Ok(())
        }
        10 => {
            in_cycle(s)?;
            match s.marks.pop() {
                Some(n) => {
                    s.view.truncate(n);
                    Ok(())
                }
                None => err(&["pop_state without push_state"]),
            }
        }
        11 | 12 => {
            in_cycle(s)?;
            if node(s, arg).is_none() {
                return err(&["add_pod/remove_pod: empty node slot"]);
            }
            let cpu = pod_cpu_request(&mut d)?;
            s.view.push((arg, if fun == 11 { cpu } else { cpu.wrapping_neg() }));
            Ok(())
        }
        _ => err(&["unknown function"]),
    }
}

fn in_cycle(s: &State) -> R<()> {
    if s.in_cycle {
        Ok(())
    } else {
        err(&["no cycle started"])
    }
}

/// plugin checks a per-plugin call: a valid index, after init and cycle.
fn plugin(s: &State, index: u32) -> R<()> {
    if index != 0 {
        return err(&["no plugin at that index"]);
    }
    in_cycle(s)
}

fn node(s: &State, slot: u32) -> Option<&Node> {
    s.nodes.get(slot as usize).and_then(|n| n.as_ref())
}

fn manifest(out: &mut Vec<u8>) -> R<()> {
    out.extend_from_slice(&ABI_MAJOR.to_le_bytes());
    out.extend_from_slice(&ABI_MINOR.to_le_bytes());
    put_uvarint(out, 0); // flags: no pods wanted
    put_uvarint(out, 1);
    put_str(out, PLUGIN.as_bytes());
    put_uvarint(out, POINT_FILTER | POINT_SCORE);
    Ok(())
}

fn init(s: &mut State, d: &mut Dec) -> R<()> {
    let mut zone = Vec::new();
    let n = d.count(2)?;
    for _ in 0..n {
        let name = d.string()?;
        if name != PLUGIN.as_bytes() {
            return err(&["init: args for a plugin this module does not have: ", &lossy(name)]);
        }
        match d.u8()? {
            0 => {} // null: defaults
            6 => {
                let fields = d.count(2)?;
                for _ in 0..fields {
                    let key = d.string()?;
                    if key == b"preferredZone" {
                        match d.u8()? {
                            0 => continue, // null: absent
                            4 => {}
                            _ => return err(&[PLUGIN, ": preferredZone: expected string"]),
                        }
                        let v = d.string()?;
                        std::str::from_utf8(v).map_err(|_| String::from("ZonePreference: preferredZone: not UTF-8"))?;
                        zone = v.to_vec();
                    } else {
                        return err(&[PLUGIN, ": ", &lossy(key), ": unknown field"]);
                    }
                }
            }
            _ => return err(&[PLUGIN, ": args: expected object"]),
        }
    }
    // Like every decoder here, this one stops at the fields it needs and
    // does not check for trailing bytes (docs/ABI.md, Versioning).
    if !zone.is_empty() {
        let mut msg = Vec::from(PLUGIN.as_bytes());
        msg.push(0x1f);
        msg.extend_from_slice(b"preferred zone ");
        msg.extend_from_slice(&zone);
        unsafe { host_log(3, msg.as_ptr(), msg.len()) };
    }
    s.preferred_zone = zone;
    s.initialised = true;
    Ok(())
}

fn sync(s: &mut State, d: &mut Dec) -> R<()> {
    let flags = d.u8()?;
    let _num_nodes = d.uvarint()?;
    // Decode the whole request before changing the mirror, so a bad
    // request leaves it as it was.
    let mut upserts = Vec::new();
    let n = d.count(5)?;
    for _ in 0..n {
        let slot = d.u32()?;
        let len = d.uvarint()?;
        if len > d.remaining() as u64 {
            return err(&["sync: node record longer than the request"]);
        }
        let rec = d.bytes(len as usize)?;
        upserts.push((slot, node_info(&mut Dec { b: rec, p: 0 })?));
    }
    let n = d.count(4)?;
    let mut deletes = Vec::with_capacity(n);
    for _ in 0..n {
        deletes.push(d.u32()?);
    }
    // Namespaces (bit 1) and budgets (bit 2) follow; this policy needs
    // neither, so the rest of the request is not read.
    if flags & 1 != 0 {
        s.nodes.clear();
    }
    for (slot, node) in upserts {
        let i = slot as usize;
        if s.nodes.len() <= i {
            s.nodes.resize_with(i + 1, || None);
        }
        s.nodes[i] = Some(node);
    }
    for slot in deletes {
        if let Some(n) = s.nodes.get_mut(slot as usize) {
            *n = None;
        }
    }
    Ok(())
}

/// node_info decodes a NodeInfo record up to the fields this policy reads.
fn node_info(d: &mut Dec) -> R<Node> {
    d.string()?; // name
    let mut zone = None;
    let n = d.count(2)?;
    for _ in 0..n {
        let k = d.string()?;
        let v = d.string()?;
        if k == ZONE_LABEL && !v.is_empty() {
            zone = Some(v.to_vec());
        }
    }
    let n = d.count(3)?;
    for _ in 0..n {
        d.string()?;
        d.string()?;
        let effect = d.u8()?;
        if !(1..=3).contains(&effect) {
            return err(&["node: taint effect out of range"]);
        }
    }
    d.bool()?; // unschedulable
    let alloc_cpu = resources(d)?;
    d.varint()?; // allowedPods
    let n = d.count(2)?;
    for _ in 0..n {
        let names = d.count(1)?;
        for _ in 0..names {
            d.string()?;
        }
        d.varint()?;
    }
    let req_cpu = resources(d)?;
    Ok(Node { zone, alloc_cpu, req_cpu })
}

/// resources decodes a Resources and returns its milliCPU.
fn resources(d: &mut Dec) -> R<i64> {
    let cpu = d.varint()?;
    d.varint()?; // memory
    d.varint()?; // ephemeral storage
    let n = d.count(2)?;
    for _ in 0..n {
        d.string()?;
        d.varint()?;
    }
    Ok(cpu)
}

/// container decodes a Container and returns (milliCPU, restartAlways).
fn container(d: &mut Dec) -> R<(i64, bool)> {
    d.string()?; // name
    d.string()?; // image
    let cpu = resources(d)?;
    let n = d.count(3)?;
    for _ in 0..n {
        d.string()?; // ip
        if d.u8()? > 2 {
            return err(&["pod: port protocol out of range"]);
        }
        d.varint()?;
    }
    Ok((cpu, d.bool()?))
}

/// pod_cpu_request decodes a Pod up to its overhead and returns its
/// effective CPU request, as the host sums it into NodeInfo.requested.
fn pod_cpu_request(d: &mut Dec) -> R<i64> {
    for _ in 0..3 {
        d.string()?; // uid, namespace, name
    }
    let n = d.count(2)?;
    for _ in 0..n {
        d.string()?;
        d.string()?;
    }
    for _ in 0..3 {
        d.string()?; // nodeName, nominatedNodeName, schedulerName
    }
    d.varint()?; // priority
    d.bool()?; // preemptNever
    d.bool()?; // terminating
    d.varint()?; // startTime
    let mut cpu: i64 = 0;
    let n = d.count(6)?;
    for _ in 0..n {
        cpu = cpu.wrapping_add(container(d)?.0);
    }
    // Sidecars (restartable init containers) run beside the app and count
    // in full; a plain init container runs beside the sidecars started
    // before it, and the pod needs at least that peak.
    let (mut sidecars, mut peak) = (0i64, 0i64);
    let n = d.count(6)?;
    for _ in 0..n {
        let (c, restart) = container(d)?;
        let during = if restart {
            cpu = cpu.wrapping_add(c);
            sidecars = sidecars.wrapping_add(c);
            sidecars
        } else {
            c.wrapping_add(sidecars)
        };
        peak = peak.max(during);
    }
    Ok(cpu.max(peak).wrapping_add(resources(d)?))
}

fn slot_list(d: &mut Dec) -> R<Vec<u32>> {
    let n = d.u32()? as usize;
    if n > 65535 || n > d.remaining() / 4 {
        return err(&["slot list: bad count"]);
    }
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(d.u32()?);
    }
    Ok(v)
}

fn filter(s: &State, d: &mut Dec, out: &mut Vec<u8>) -> R<()> {
    let slots = slot_list(d)?;
    out.extend_from_slice(&(slots.len() as u32).to_le_bytes());
    let mut failed = false;
    for &slot in &slots {
        let n = node(s, slot).ok_or_else(|| String::from("filter: empty node slot"))?;
        let entry: u16 = if n.zone.is_some() { 0 } else { 1 };
        failed |= entry != 0;
        out.extend_from_slice(&entry.to_le_bytes());
    }
    if failed {
        put_uvarint(out, 1);
        out.push(UNSCHEDULABLE_AND_UNRESOLVABLE);
        put_uvarint(out, 1);
        put_str(out, NO_ZONE_REASON.as_bytes());
    } else {
        put_uvarint(out, 0);
    }
    Ok(())
}

fn score(s: &State, d: &mut Dec, out: &mut Vec<u8>) -> R<()> {
    let slots = slot_list(d)?;
    out.extend_from_slice(&(slots.len() as u32).to_le_bytes());
    for &slot in &slots {
        let n = node(s, slot).ok_or_else(|| String::from("score: empty node slot"))?;
        let mut sc: i64 = 0;
        if !s.preferred_zone.is_empty() && n.zone.as_deref() == Some(&s.preferred_zone[..]) {
            sc = ZONE_POINTS;
        }
        let mut req = n.req_cpu;
        for &(v, delta) in &s.view {
            if v == slot {
                req = req.wrapping_add(delta);
            }
        }
        if n.alloc_cpu > 0 {
            // Free CPU, clamped to [0, alloc]; a non-positive request (a
            // what-if removal gone below zero) leaves all of it free.
            let free = if req <= 0 { n.alloc_cpu } else { (n.alloc_cpu - req).max(0) };
            sc += (free as u128 * FREE_CPU_POINTS as u128 / n.alloc_cpu as u128) as i64;
        }
        out.extend_from_slice(&sc.to_le_bytes());
    }
    Ok(())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_uvarint(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Dec reads the ABI encoding; every read checks the bounds.
struct Dec<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Dec<'a> {
    fn remaining(&self) -> usize {
        self.b.len() - self.p
    }

    fn bytes(&mut self, n: usize) -> R<&'a [u8]> {
        if n > self.remaining() {
            return err(&["truncated input"]);
        }
        let v = &self.b[self.p..self.p + n];
        self.p += n;
        Ok(v)
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.bytes(1)?[0])
    }

    fn u32(&mut self) -> R<u32> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn bool(&mut self) -> R<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => err(&["bool out of range"]),
        }
    }

    fn uvarint(&mut self) -> R<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            if i == 9 && b > 1 {
                return err(&["uvarint overflows 64 bits"]);
            }
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        err(&["uvarint longer than 10 bytes"])
    }

    fn varint(&mut self) -> R<i64> {
        let u = self.uvarint()?;
        Ok((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    /// count reads a list count and refuses one the remaining bytes could
    /// not hold at `min` bytes per element.
    fn count(&mut self, min: usize) -> R<usize> {
        let n = self.uvarint()?;
        if n > (self.remaining() / min) as u64 {
            return err(&["list count larger than the input"]);
        }
        Ok(n as usize)
    }

    fn string(&mut self) -> R<&'a [u8]> {
        let n = self.count(1)?;
        self.bytes(n)
    }
}
