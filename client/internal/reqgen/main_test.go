package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed requests_gen.go is what the schemas give today: a schema
// change without go generate ./client fails here.
func TestRequestsMatchTheSchemas(t *testing.T) {
	want, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../requests_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("client/requests_gen.go differs from the request schemas: run go generate ./client")
	}
}
