module github.com/wasmsched/wasmsched/plugins-wasm

// go 1.25: TinyGo 0.40 compiles only modules that ask for Go <= 1.25.
go 1.25

require (
	github.com/wasmsched/wasmsched/abi v0.0.0
	github.com/wasmsched/wasmsched/guest-sdk v0.0.0
)

replace (
	github.com/wasmsched/wasmsched/abi => ../abi
	github.com/wasmsched/wasmsched/guest-sdk => ../guest-sdk
)
