// Package tool is the guest SDK for Tools built to WebAssembly and run on
// Brain's built-in "brain" environment. A Tool exports run: it receives
// its invocation (the input, the environment's configuration and the
// deadline) and answers an outcome; during run it reaches the Tool
// services (emit, result, returned, finish, model, environments,
// telemetry) as host functions.
//
// A Go Tool registers its function from an init function and is built as
// a WASI reactor:
//
//	func init() { tool.Export(myTool) }
//	func main() {}
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tool.wasm .
//
// Built that way (files tagged wasip1) the package exports run and
// brain_alloc and imports the service functions of the host module
// "brain"; a service the host refuses answers a *HostError with the API
// error code. An error the Tool returns fails its call with the first
// 4096 bytes of its message, and with the code of the *HostError it
// wraps (tool_error otherwise). The ABI is the agentloop ABI with run in place of turn and
// the Tool services in place of the agentloop services; it is specified
// byte for byte in the host's package doc (brain/internal/loophost).
// Outside Wasm, Export only records the function (see Exported), so a
// Tool also builds and tests natively against any Services.
//
// The package depends on the standard library and the stdlib-only
// brain/api wire types.
package tool
