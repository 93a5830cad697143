package stripenc

import "testing"

func BenchmarkFilterRow(b *testing.B) {
	src := benchPhoto()
	f := newRowFilter(src.Stride)
	b.SetBytes(int64(src.Stride))
	y := 1
	for b.Loop() {
		f.filter(src.Pix[y*src.Stride:][:src.Stride], src.Pix[(y-1)*src.Stride:][:src.Stride])
		y = y%(benchSide-1) + 1
	}
}
