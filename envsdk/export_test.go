package envsdk

import "time"

// SetGrantTimeout replaces the bound of grant calls made with the default
// client until the returned function restores it.
func SetGrantTimeout(d time.Duration) (restore func()) {
	old := grantTimeout
	grantTimeout = d
	return func() { grantTimeout = old }
}

// SetTransferTimeout replaces the bound Serve gives reading a body and
// writing an answer until the returned function restores it.
func SetTransferTimeout(d time.Duration) (restore func()) {
	old := transferTimeout
	transferTimeout = func(int64) time.Duration { return d }
	return func() { transferTimeout = old }
}
