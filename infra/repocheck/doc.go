// Package repocheck checks the repository itself, as part of go test and so
// of make test: that it stands on its own (no tracked file names a document
// outside it, and the code's pointers into docs/ lead to a page and a
// section that exist), and that no build output is tracked (no executable
// binary and nothing over 1 MB outside testdata/), that no package under
// internal/ is over 3,000 lines of non-test Go or imports anything under
// infra/, and that each function links only what it uses. It has no code of its own: the checks are its tests.
package repocheck
