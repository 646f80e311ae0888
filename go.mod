module github.com/wasmsched/wasmsched

go 1.25.0

require (
	github.com/hashicorp/go-hclog v1.6.3
	github.com/tetratelabs/wazero v1.12.0
	github.com/wasmsched/wasmsched/abi v0.0.0
	github.com/wasmsched/wasmsched/guest-sdk v0.0.0
)

require (
	github.com/kr/pretty v0.3.1 // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/wasmsched/wasmsched/plugins-wasm v0.0.0
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	golang.org/x/sys v0.44.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/apimachinery v0.35.4
	k8s.io/utils v0.0.0-20251002143259-bc988d571ff4
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/yaml v1.6.0
)

replace (
	github.com/wasmsched/wasmsched/abi => ./abi
	github.com/wasmsched/wasmsched/guest-sdk => ./guest-sdk
	github.com/wasmsched/wasmsched/plugins-wasm => ./plugins-wasm
)
