package main

import (
	"bytes"
	"testing"

	"genjobs/internal/asset"
)

// The job runs upload the synthetic photo by POST /assets: it must fit
// there, and be the same photo every run, or runs would not compare.
func TestThePhotoFitsAnUploadAndIsTheSameEachRun(t *testing.T) {
	a, err := photoPNG(photoSide)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) > asset.MaxDirectBytes {
		t.Fatalf("%d B, over %d", len(a), asset.MaxDirectBytes)
	}
	b, _ := photoPNG(photoSide)
	if !bytes.Equal(a, b) {
		t.Error("two photos of the same side differ")
	}
}
