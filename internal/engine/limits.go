package engine

// MaxOutputPixels is the largest output, 22000 x 22000 (catalog.MaxOutputPixels,
// which a test keeps equal, refuses more at creation).
const MaxOutputPixels = 22000 * 22000

// MaxWebPSide is the largest width or height a WebP file can hold (the
// format stores 14-bit sizes; libwebp refuses 16384).
const MaxWebPSide = 16383

// MaxWebPPixels bounds a WebP output's area: the pure-Go encoder holds
// about 50 bytes a pixel while it works (835 MiB at 4096 x 4096), so this
// bound, 8192 x 8192, needs about 3.3 GB.
const MaxWebPPixels = 8192 * 8192
