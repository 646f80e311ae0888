package main

// The rows of docs/PERFORMANCE.md's benchmark report: each a Go
// benchmark whose Wasm and native variants run in one process, so their
// ratio is taken on the same machine at the same minute. Targets are the
// ones the project holds itself to (docs/PERFORMANCE.md, "Benchmark
// report"): the runtime that ships (the release binary and the image are
// the wasmtime build, scripts/build-release.sh) holds the shipped-runtime
// targets, so the wasmtime rows carry them; the wazero rows (the pure-Go
// build of `go run` and CGO_ENABLED=0) carry wazero's own floor where it
// has one (per node ≤ 1.3×, SchedulingBasic ≥ 0.75×) and the
// shipped-runtime targets elsewhere.

// shipped is the runtime the image and the release binary use.
const shipped = "wasmtime"

// defaultRows is the report's table, in the order it is printed.
var defaultRows = []Row{
	{
		Name: "pernode-wasmtime", Title: "whole default set, per node", Runtime: "wasmtime",
		Pkg: "host/platform/runtime/wasmtime", Tags: "wasmtime", Bench: "RuntimesPerNode$/set=default/backend=(native|tinygo-wasmtime)$", Benchtime: "300x",
		Wasm: "/backend=tinygo-wasmtime$", Native: "/backend=native$", Unit: "ns/node", Target: Target{Op: "<=", Ratio: 1.2},
	},
	{
		Name: "pernode-wazero", Title: "whole default set, per node", Runtime: "wazero",
		Pkg: "host/platform/runtime/wasmtime", Tags: "wasmtime", Bench: "RuntimesPerNode$/set=default/backend=(native|tinygo-wazero)$", Benchtime: "300x",
		Wasm: "/backend=tinygo-wazero$", Native: "/backend=native$", Unit: "ns/node", Target: Target{Op: "<=", Ratio: 1.3},
	},
	{
		Name: "topology-wasmtime", Title: "topology plugins (PodTopologySpread + InterPodAffinity), per node, 3000 and 30 000 pods", Runtime: "wasmtime",
		Pkg: "host/platform/runtime/wasmtime", Tags: "wasmtime", Bench: "RuntimesTopology$/.*/.*/backend=(native|tinygo-wasmtime)$", Benchtime: "1500x",
		Wasm: "/backend=tinygo-wasmtime$", Native: "/backend=native$", Unit: "ns/node", Target: Target{Op: "<=", Ratio: 1.3},
	},
	{
		Name: "topology-wazero", Title: "topology plugins (PodTopologySpread + InterPodAffinity), per node, 3000 and 30 000 pods", Runtime: "wazero",
		Pkg: "host/platform/runtime/wasmtime", Tags: "wasmtime", Bench: "RuntimesTopology$/.*/.*/backend=(native|tinygo-wazero)$", Benchtime: "1500x",
		Wasm: "/backend=tinygo-wazero$", Native: "/backend=native$", Unit: "ns/node", Target: Target{Op: "<=", Ratio: 1.3},
	},
	{
		Name: "schedbasic-wasmtime", Title: "SchedulingBasic, 5000 nodes", Runtime: "wasmtime",
		Pkg: "host/run/sim", Tags: "wasmtime", Bench: "SchedulingBasic$/nodes=5000/backend=(native|wasmtime)$", Benchtime: "1x",
		Wasm: "/backend=wasmtime$", Native: "/backend=native$", Unit: "pods/s", Target: Target{Op: ">=", Ratio: 0.9},
	},
	{
		Name: "schedbasic-wazero", Title: "SchedulingBasic, 5000 nodes", Runtime: "wazero",
		Pkg: "host/run/sim", Bench: "SchedulingBasic$/nodes=5000/backend=(native|wasm)$", Benchtime: "1x",
		Wasm: "/backend=wasm$", Native: "/backend=native$", Unit: "pods/s", Target: Target{Op: ">=", Ratio: 0.75},
	},
	{
		Name: "preemption-wasmtime", Title: "PreemptionAsync, 5000 nodes", Runtime: "wasmtime",
		Pkg: "host/run/sim", Tags: "wasmtime", Bench: "PreemptionAsync$/mode=async/backend=(native|wasmtime)$", Benchtime: "1x",
		Wasm: "/backend=wasmtime$", Native: "/backend=native$", Unit: "pods/s", Target: Target{Op: ">=", Ratio: 0.85},
	},
	{
		Name: "preemption-wazero", Title: "PreemptionAsync, 5000 nodes", Runtime: "wazero",
		Pkg: "host/run/sim", Bench: "PreemptionAsync$/mode=async/backend=(native|wasm)$", Benchtime: "1x",
		Wasm: "/backend=wasm$", Native: "/backend=native$", Unit: "pods/s", Target: Target{Op: ">=", Ratio: 0.85},
	},
	{
		Name: "eviction-wasmtime", Title: "eviction round, 5000 nodes / 50 000 pods, steady", Runtime: "wasmtime",
		Pkg: "host/engines/eviction", Tags: "wasmtime", Bench: "EvictionRound$/backend=(wasmtime|native)/steady$", Benchtime: "3x",
		Wasm: "/backend=wasmtime/steady$", Native: "/backend=native/steady$", Unit: "ns/op", Target: Target{Op: "<=", Ratio: 1.3},
	},
	{
		Name: "eviction-wazero", Title: "eviction round, 5000 nodes / 50 000 pods, steady", Runtime: "wazero",
		Pkg: "host/engines/eviction", Bench: "EvictionRound$/backend=(wasm|native)/steady$", Benchtime: "3x",
		Wasm: "/backend=wasm/steady$", Native: "/backend=native/steady$", Unit: "ns/op", Target: Target{Op: "<=", Ratio: 1.3},
	},
	{
		Name: "vpod-wasmtime", Title: "vpod PlaceAll, per vreplica", Runtime: "wasmtime",
		Pkg: "host/engines/vpod", Tags: "wasmtime", Bench: "PlaceAll$/backend=(wasmtime|native)$", Benchtime: "1x",
		Wasm: "/backend=wasmtime$", Native: "/backend=native$", Unit: "ns/vreplica", Target: Target{Op: "<=", Ratio: 1.3},
	},
	{
		Name: "vpod-wazero", Title: "vpod PlaceAll, per vreplica", Runtime: "wazero",
		Pkg: "host/engines/vpod", Bench: "PlaceAll$/backend=(wasm|native)$", Benchtime: "1x",
		Wasm: "/backend=wasm$", Native: "/backend=native$", Unit: "ns/vreplica", Target: Target{Op: "<=", Ratio: 1.3},
	},
	{
		Name: "schedbasic15k-wazero", Title: "SchedulingBasic, 15 000 nodes (no target: compare with kube-scheduler)", Runtime: "wazero",
		Pkg: "host/run/sim", Bench: "SchedulingBasic15000$/pods=15000/backend=(native|wasm)$", Benchtime: "1x",
		Wasm: "/backend=wasm$", Native: "/backend=native$", Unit: "pods/s",
	},
	{
		Name: "daemonset15k-wazero", Title: "SchedulingDaemonset, 15 000 nodes (no target: compare with kube-scheduler)", Runtime: "wazero",
		Pkg: "host/run/sim", Bench: "SchedulingDaemonset$/nodes=15000/backend=(native|wasm)$", Benchtime: "1x",
		Wasm: "/backend=wasm$", Native: "/backend=native$", Unit: "pods/s",
	},
}
