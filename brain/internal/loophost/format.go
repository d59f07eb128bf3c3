package loophost

import (
	"bytes"
	"errors"
)

// errComponent and errText refuse bytes that are WebAssembly but not a
// core module in the binary format: the compiler would only say that the
// version header or the magic number is wrong.
var (
	errComponent = errors.New("the bytes are a WebAssembly component (component model), not a core module: " +
		"Brain runs core modules using WASI preview 1 (Go: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared; " +
		"Rust: the wasm32-wasip1 target, without turning the module into a component)")
	errText = errors.New("the bytes are a module in the WebAssembly text format; " +
		"admit the binary format (convert it with wat2wasm or wasm-tools parse)")
)

// checkFormat refuses a component and a module in the text format, naming
// what they are; other bytes are left to the compiler.
func checkFormat(b []byte) error {
	// A component's preamble is the magic number, version 0x0d and layer 1;
	// a core module's is the magic number and version 1 (layer 0).
	if len(b) >= 8 && string(b[:4]) == "\x00asm" && string(b[4:6]) != "\x01\x00" && string(b[6:8]) == "\x01\x00" {
		return errComponent
	}
	if isText(b) {
		return errText
	}
	return nil
}

// isText reports whether b starts, after white space and comments, with
// "(module" or "(component".
func isText(b []byte) bool {
	for {
		b = bytes.TrimLeft(b, " \t\r\n")
		switch {
		case bytes.HasPrefix(b, []byte(";;")):
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				return false
			}
			b = b[i+1:]
		case bytes.HasPrefix(b, []byte("(;")):
			i := bytes.Index(b, []byte(";)"))
			if i < 0 {
				return false
			}
			b = b[i+2:]
		default:
			return bytes.HasPrefix(b, []byte("(module")) || bytes.HasPrefix(b, []byte("(component"))
		}
	}
}
