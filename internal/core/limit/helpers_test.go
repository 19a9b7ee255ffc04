package limit

import "time"

// t0 is an arbitrary virtual epoch; no test reads the wall clock.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// must unwraps a constructor result; a valid test config never fails,
// so a panic (which fails the test with the error) is enough.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// busy is a success sample that uses the whole current limit, so
// "grow only when used" checks pass.
func busy(a Algorithm, now time.Time, lat time.Duration) Sample {
	return Sample{Now: now, Latency: lat, InFlight: a.Limit()}
}
