// Command defaultloop is the built-in default agentloop as a Wasm guest:
// built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared it exports turn
// and runs agentloop.Default against the host's services. The build is
// embedded by package builtin.
package main

import "github.com/brain-in-go/brain/brain/agentloop"

func init() { agentloop.Export(agentloop.Default) }

func main() {}
