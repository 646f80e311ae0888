module github.com/wasmsched/wasmsched

go 1.25.0

require (
	github.com/hashicorp/go-hclog v1.6.3
	github.com/tetratelabs/wazero v1.12.0
	github.com/wasmsched/wasmsched/abi v0.0.0
	github.com/wasmsched/wasmsched/guest-sdk v0.0.0-00010101000000-000000000000
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	golang.org/x/sys v0.44.0 // indirect
)

replace (
	github.com/wasmsched/wasmsched/abi => ./abi
	github.com/wasmsched/wasmsched/guest-sdk => ./guest-sdk
	github.com/wasmsched/wasmsched/plugins-wasm => ./plugins-wasm
)
