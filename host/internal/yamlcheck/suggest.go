package yamlcheck

// Suggest is ` (did you mean "X"?)` for the name in names closest to got
// (a likely typo: a small edit distance, case ignored), or "" when none
// is close. Checks outside this package use it to name what a misspelt
// plugin or key most likely meant.
func Suggest(got string, names []string) string { return suggest(got, names) }
