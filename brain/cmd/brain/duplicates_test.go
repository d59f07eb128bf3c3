package main

import (
	"strings"
	"testing"
)

// TestServeRefusesSettingFilesNamingAKeyTwice: a routes file or a
// providers file that names a member twice in one object (a route, or a
// route's or a provider's field) is a refused setting, exit 2 naming the
// flag and the name given twice, never quoting an api_key. Before, the
// last of the two won without a word: one of two routes of the same
// driver name, or one of two endpoints or base URLs, was dropped.
func TestServeRefusesSettingFilesNamingAKeyTwice(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ flag, body, twice string }{
		"route twice": {"--environment-routes-file",
			`{"box":{"endpoint":"https://a.example","api_key":"sekrit-one"},"box":{"endpoint":"https://b.example","api_key":"sekrit-two"}}`, `"box"`},
		"endpoint twice": {"--environment-routes-file",
			`{"box":{"endpoint":"https://a.example","api_key":"sekrit-one","endpoint":"https://b.example"}}`, `"endpoint"`},
		"api_key twice": {"--environment-routes-file",
			`{"box":{"endpoint":"https://a.example","api_key":"sekrit-one","api_key":"sekrit-two"}}`, `"api_key"`},
		"base_url twice": {"--providers-file",
			`{"providers":[{"name":"local","dialect":"openai_chat_completions","base_url":"http://127.0.0.1:9/v1","base_url":"http://127.0.0.1:8/v1","models":[{"id":"m"}]}]}`, `"base_url"`},
		"providers twice": {"--providers-file",
			`{"providers":[],"providers":[{"name":"local","dialect":"openai_chat_completions","base_url":"http://127.0.0.1:9/v1","models":[{"id":"m"}]}]}`, `"providers"`},
	} {
		file := writeFile(t, dir, "settings.json", c.body)
		code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", c.flag, file)
		if served || code != 2 || !strings.Contains(stderr, c.flag) || !strings.Contains(stderr, c.twice+" is") || !strings.Contains(stderr, "twice") || strings.Contains(stderr, "sekrit") {
			t.Errorf("%s: served %v, exit %d, stderr %q; want exit 2 naming %s and %s given twice", name, served, code, stderr, c.flag, c.twice)
		}
	}
}
