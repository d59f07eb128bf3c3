// Command peers runs the two workloads of PERFORMANCE.md rows 16–17 on
// Brain, Restate and the Temporal dev server, side by side, in alternated
// rounds:
//
//   - W1: a message, one instant model step, the answer;
//   - W2: a model step, 4 parallel tool calls to one local HTTP echo, a
//     model step, the answer.
//
// Each peer runs one "session" per client: Brain a session (scripted
// model, tools in an environment/v1 echo), Restate a virtual object keyed
// by the client whose model steps are restate.Run blocks and tools
// restate.RunAsync blocks, Temporal a workflow per turn whose model steps
// and tools are activities. Brain runs in this process over its real
// journal; Restate and Temporal are the servers run.sh starts.
//
// It is its own Go module so that the main module gains no dependency.
package main
