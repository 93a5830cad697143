package stripenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
)

// JPEG writes a baseline JPEG of width x height at quality (1 to 100, as
// image/jpeg), computing the image strip by strip with up to workers strips
// in flight.
//
// Each strip is coded on its own, from an *image.RGBA, to the bytes
// image/jpeg would write for it (jpegcoder.go), and the strips' entropy-coded
// segments are joined into one scan, separated by restart markers: a
// restart resets the DC predictions and aligns to a byte, which is what a
// fresh encoder does, so the file decodes to exactly the pixels of
// image/jpeg's encoding of the whole image. Its tables are image/jpeg's,
// which depend on the quality alone.
func JPEG(w io.Writer, width, height, quality, workers int, fill FillRGBA) error {
	if err := checkSize("JPEG", width, height); err != nil {
		return err
	}
	rows := stripRows(width)
	// One restart interval is one strip: its MCUs must fit DRI's 16 bits.
	// (They do: 64 rows of the widest JPEG are 16384 MCUs, and the taller
	// strips of narrow images hold about 256.)
	interval := (width + 15) / 16 * (rows / 16)
	if interval > 0xffff {
		return fmt.Errorf("stripenc: a restart interval of %d MCUs is over JPEG's limit", interval)
	}
	coder, err := newJPEGCoder(quality)
	if err != nil {
		return err
	}
	band := bandRows(width, rows)
	run := &stripRun[*image.RGBA, []byte]{
		n:       (height + rows - 1) / rows,
		workers: workers,
		window:  2 * workers,
		newState: func() *image.RGBA {
			return &image.RGBA{Pix: make([]byte, 4*width*min(band, height)), Stride: 4 * width}
		},
		// A strip is filled and coded a band at a time, in order, into
		// one buffer of band rows: the coding carries on from band to
		// band, so the strip's data is what coding it whole would give.
		produce: func(dst *image.RGBA, i int, scan *[]byte) error {
			y0 := i * rows
			y1 := min(y0+rows, height)
			s := coder.newScan((*scan)[:0])
			for b0 := y0; b0 < y1; b0 += band {
				b1 := min(b0+band, y1)
				dst.Rect = image.Rect(0, b0, width, b1)
				dst.Pix = dst.Pix[:cap(dst.Pix)][:4*width*(b1-b0)]
				clear(dst.Pix)
				if err := fill(dst); err != nil {
					return err
				}
				coder.encodeRows(&s, dst)
			}
			*scan = s.finish()
			return nil
		},
		consume: func(i int, scan *[]byte) error {
			var marker []byte
			if i == 0 {
				marker = coder.tables.fileHeader(width, height, interval)
			} else {
				marker = []byte{0xff, 0xd0 + byte((i-1)%8)} // RST0..RST7
			}
			if _, err := w.Write(marker); err != nil {
				return err
			}
			_, err := w.Write(*scan)
			return err
		},
	}
	if err := run.run(); err != nil {
		return err
	}
	_, err = w.Write([]byte{0xff, 0xd9})
	return err
}

const (
	markerSOF0 = 0xc0
	markerDHT  = 0xc4
	markerSOS  = 0xda
	markerDQT  = 0xdb
	markerDRI  = 0xdd
	markerEOI  = 0xd9
)

// flushBuffer is a bytes.Buffer that image/jpeg writes to directly instead
// of through a bufio.Writer of its own.
type flushBuffer struct{ bytes.Buffer }

func (*flushBuffer) Flush() error { return nil }

// jpegParts is a JPEG file image/jpeg wrote, split into its parts.
type jpegParts struct {
	buf flushBuffer
	// The payloads of the marker segments before the scan, as slices of buf.
	dqt, sof, dht, sos []byte
	scan               []byte // the entropy-coded data, up to EOI
}

var errStripSyntax = errors.New("stripenc: image/jpeg wrote a file in a layout this package does not know")

// parse finds the parts of the file image/jpeg wrote: SOI, DQT, SOF0, DHT,
// SOS, entropy-coded data, EOI. In the data a 0xFF byte is always followed
// by a stuffed 0x00; any other marker means a layout this code does not
// know, and is refused rather than read wrongly.
func (s *jpegParts) parse() error {
	b := s.buf.Bytes()
	s.dqt, s.sof, s.dht, s.sos, s.scan = nil, nil, nil, nil, nil
	if len(b) < 4 || b[0] != 0xff || b[1] != 0xd8 {
		return errStripSyntax
	}
	pos := 2
	for s.sos == nil {
		if pos+4 > len(b) || b[pos] != 0xff {
			return errStripSyntax
		}
		marker := b[pos+1]
		n := int(binary.BigEndian.Uint16(b[pos+2:]))
		if n < 2 || pos+2+n > len(b) {
			return errStripSyntax
		}
		payload := b[pos+4 : pos+2+n]
		pos += 2 + n
		switch marker {
		case markerDQT:
			s.dqt = payload
		case markerSOF0:
			s.sof = payload
		case markerDHT:
			s.dht = payload
		case markerSOS:
			s.sos = payload
		default:
			return errStripSyntax
		}
	}
	if s.dqt == nil || s.dht == nil || len(s.sof) < 5 || len(b)-pos < 2 ||
		b[len(b)-2] != 0xff || b[len(b)-1] != markerEOI {
		return errStripSyntax
	}
	s.scan = b[pos : len(b)-2]
	for rest := s.scan; ; {
		k := bytes.IndexByte(rest, 0xff)
		if k < 0 {
			break
		}
		if k+1 >= len(rest) || rest[k+1] != 0x00 {
			return errStripSyntax
		}
		rest = rest[k+2:]
	}
	return nil
}

// fileHeader is SOI, the tables, SOF0 with the image's size, DRI with one
// strip per restart interval, and SOS.
func (f *jpegParts) fileHeader(width, height, interval int) []byte {
	var h []byte
	segment := func(marker byte, payload []byte) {
		h = append(h, 0xff, marker)
		h = binary.BigEndian.AppendUint16(h, uint16(len(payload)+2))
		h = append(h, payload...)
	}
	h = append(h, 0xff, 0xd8)
	segment(markerDQT, f.dqt)
	sof := bytes.Clone(f.sof)
	// SOF0's payload: precision (1 byte), height (2), width (2), components.
	binary.BigEndian.PutUint16(sof[1:], uint16(height))
	binary.BigEndian.PutUint16(sof[3:], uint16(width))
	segment(markerSOF0, sof)
	segment(markerDHT, f.dht)
	segment(markerDRI, binary.BigEndian.AppendUint16(nil, uint16(interval)))
	segment(markerSOS, f.sos)
	return h
}
