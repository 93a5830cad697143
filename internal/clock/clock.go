// Package clock gives the service its notion of now, so that deadlines and
// deprecation dates can be tested on both sides.
package clock

import "time"

// Clock tells the current time.
type Clock interface {
	Now() time.Time
}

// System is the wall clock, in UTC.
type System struct{}

// Now returns the current UTC time.
func (System) Now() time.Time { return time.Now().UTC() }

// Fixed always answers the same instant; tests move it by assigning T.
type Fixed struct{ T time.Time }

// Now returns f.T.
func (f *Fixed) Now() time.Time { return f.T }
