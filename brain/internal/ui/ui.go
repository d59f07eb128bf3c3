package ui

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// Prefix is the path the inspector is served under.
const Prefix = "/ui/"

// Files answers the inspector's files: index.html, app.js and style.css.
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}
