module github.com/wasmsched/wasmsched/abi

// go 1.25: TinyGo 0.40 compiles only modules that ask for Go <= 1.25.
go 1.25
