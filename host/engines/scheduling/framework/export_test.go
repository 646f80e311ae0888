package framework

// SelectHostForTest exposes selectHost to the external tests.
var SelectHostForTest = selectHost
