package toolset_test

import (
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A provider keeping its workspace in memory implements read, write and
// edit. In Provider.Execute it would answer envsdk.Output(out), or return
// the error, which is already a typed failure.
func Example() {
	files := map[string][]byte{}
	tools := map[string]func(input json.RawMessage) (any, error){
		toolset.ToolWrite: func(input json.RawMessage) (any, error) {
			var in toolset.WriteInput
			if err := toolset.Decode(input, &in); err != nil {
				return nil, err
			}
			p, err := toolset.Clean(in.Path)
			if err != nil {
				return nil, err
			}
			data, err := in.Data()
			if err != nil {
				return nil, err
			}
			files[p] = data
			return toolset.WriteOutput{Bytes: len(data)}, nil
		},
		toolset.ToolEdit: func(input json.RawMessage) (any, error) {
			var in toolset.EditInput
			if err := toolset.Decode(input, &in); err != nil {
				return nil, err
			}
			p, err := toolset.Clean(in.Path)
			if err != nil {
				return nil, err
			}
			edited, err := in.Apply(files[p])
			if err != nil {
				return nil, err
			}
			files[p] = edited
			return toolset.EditOutput{Replacements: 1}, nil
		},
		toolset.ToolRead: func(input json.RawMessage) (any, error) {
			var in toolset.ReadInput
			if err := toolset.Decode(input, &in); err != nil {
				return nil, err
			}
			p, err := toolset.Clean(in.Path)
			if err != nil {
				return nil, err
			}
			data := files[p][min(in.Offset, int64(len(files[p]))):]
			n := min(in.Limited(1<<20), int64(len(data)))
			return toolset.NewReadOutput(data[:n], int64(len(files[p])), n < int64(len(data))), nil
		},
	}
	execute := func(implementation, input string) {
		tool, err := toolset.Select(json.RawMessage(implementation), tools)
		if err == nil {
			var out any
			if out, err = tool(json.RawMessage(input)); err == nil {
				raw, _ := json.Marshal(out)
				fmt.Println(string(raw))
				return
			}
		}
		fmt.Println(err)
	}
	execute(`{"tool":"write"}`, `{"path":"notes/a.txt","content":"hello world"}`)
	execute(`{"tool":"edit"}`, `{"path":"notes/./a.txt","old":"world","new":"there"}`)
	execute(`{"tool":"edit"}`, `{"path":"notes/a.txt","old":"e","new":"3"}`)
	execute(`{"tool":"read"}`, `{"path":"notes/a.txt","limit":5}`)
	execute(`{"tool":"read"}`, `{"path":"../etc/passwd"}`)
	execute(`{"tool":"read"}`, `{"path":"notes/a.txt","offset":-1}`)
	execute(`{"tool":"list"}`, `{}`)
	// Output:
	// {"bytes":11}
	// {"replacements":1}
	// invalid_input: input.old occurs 3 times in notes/a.txt; it must occur exactly once
	// {"content":"hello","encoding":"utf8","size":11,"truncated":true}
	// path_escape: path "../etc/passwd" leaves the workspace
	// invalid_input: input.offset: must be at least 0, got -1
	// unsupported: unsupported tool "list"
}
