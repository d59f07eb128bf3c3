// Package toolset is the standard tool set of environment/v1: five tools,
// command, read, write, list and edit, that any provider giving a binding a
// workspace may implement, so that agents and tool definitions written for
// one such provider work with the others. The reference providers
// (providers/workspace on the host, providers/docker in a container) both
// implement it; a third-party provider may implement all of it or a part.
//
// The package holds what does not depend on where the workspace lives: the
// wire types, the strict decoding and validation of inputs, the lexical
// path rules, the edit logic and output capping. Running a program, and
// reading and writing files, stays with the provider.
//
// # Wire format
//
// The implementation of an execute is the descriptor {"tool": NAME}
// (Descriptor, Implementation; Select decodes it). The inputs and outputs:
//
//	command  {"argv": [..]} or {"shell": "line"} (run by /bin/sh -c), "cwd"?,
//	         "env"? {NAME: VALUE}, "stdin"?, "timeout_ms"?
//	         → {"exit_code", "signal"?, "stdout", "stderr", "truncated"}
//	read     {"path", "offset"?, "limit"?} → {"content", "encoding", "size", "truncated"}
//	write    {"path", "content", "encoding"?: "utf8"|"base64", "append"?} → {"bytes"}
//	list     {"path"?, "recursive"?} → {"entries": [{"path", "type", "size"}], "truncated"}
//	edit     {"path", "old", "new"} → {"replacements": 1}
//
// (CommandInput, CommandOutput, ReadInput, ReadOutput, and so on.) Content
// is text when it is valid UTF-8 (encoding "utf8"), base64 otherwise; a
// read cut by its limit inside a character ends before it (TrimCutRune),
// so that text stays text and the next read starts at that character. An
// entry's type is file, dir, symlink or other. A descriptor that is not
// {"tool": NAME}, or a tool the provider does not implement, is answered
// unsupported.
//
// # Inputs
//
// Decode decodes an input strictly — an unknown field, a wrong type or a
// value its validate tag refuses fails — and answers invalid_input naming
// the field in the message and in details {"field": "input.NAME"}. An
// absent or null input is {}. A command needs exactly one of argv and
// shell, no NUL byte in an argument, the shell line or a variable (no
// program can be given one), and no variable whose name is empty or holds
// "=" (a program would see another variable than the one named):
// invalid_input naming the field; an edit's old
// text must be non-empty and occur exactly once in the file
// (EditInput.Apply), else invalid_input with details {"matches": N}.
//
// # Paths
//
// Paths are slash-separated and relative to the workspace; "" and "." name
// the workspace itself. Clean refuses, before anything touches a file, a
// path with a NUL byte (invalid_input) and an absolute path or one that
// climbs out with ".." (path_escape, details {"path"}). The inputs of
// read, write and edit refuse, as they are decoded, a path whose form
// names a directory (ending in "/", "/." or "/.."), which cleaning would
// turn into the name of a file: invalid_input, details {"field", "path"}.
// The path in details is cut, between characters, to
// envapi.MaxMessageLen bytes, as the message is. A symbolic link
// that leads outside the workspace is the provider's to refuse, with
// path_escape, where it resolves the path.
//
// # Output
//
// Outputs are capped by the provider: a command keeps the head of its
// stdout and stderr (Budget, Head) and sets truncated when it dropped
// bytes; a read returns at most the provider's cap, or the input's smaller
// limit (ReadInput.Limited).
package toolset
