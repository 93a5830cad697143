package generate

import "genjobs/internal/engine/enginetest"

// The helpers every engine's tests share, by the names these tests use.
var (
	genRequest           = enginetest.Request
	genPNGInput          = enginetest.PNGInput
	genSolid             = enginetest.Solid
	genRun               = enginetest.Run
	benchmarkGen         = enginetest.Benchmark
	jpegBytes            = enginetest.JPEGBytes
	webpBytes            = enginetest.WebPBytes
	photo                = enginetest.Photo
	nrgba                = enginetest.NRGBA
	maxPremultipliedDiff = enginetest.MaxPremultipliedDiff
)
