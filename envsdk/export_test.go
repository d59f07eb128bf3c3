package envsdk

import "time"

// SetGrantTimeout replaces the bound of grant calls made with the default
// client until the returned function restores it.
func SetGrantTimeout(d time.Duration) (restore func()) {
	old := grantTimeout
	grantTimeout = d
	return func() { grantTimeout = old }
}
