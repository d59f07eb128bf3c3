package conformance

import "net/http"

// newClient is the client commands are sent with when the target names
// none. Brain follows no redirect, so neither does the suite: a provider
// answering 3xx gives no response, wherever it points.
func newClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
