package envapi_test

import (
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A command that does not decode is refused with a *FieldError naming the
// field by its JSON path, the reason a provider answers with its 400.
func ExampleDecodeCommand() {
	cmd, err := envapi.DecodeCommand([]byte(`{"contract":"environment/v1","operation":{
		"session_id":"s1","environment":"box","sequence":7,
		"request":{"type":"cancel","target_sequence":5}}}`))
	fmt.Println(cmd.Operation.Sequence, cmd.Operation.Request.Type, err)

	_, err = envapi.DecodeCommand([]byte(`{"contract":"environment/v1","operation":{
		"session_id":"s1","environment":"box","sequence":7,
		"request":{"type":"cancel","target_sequence":0}}}`))
	var fe *envapi.FieldError
	fmt.Println(errors.As(err, &fe), fe.Field)

	_, err = envapi.DecodeCommand([]byte(`{"contract":"environment/v1","operation":{
		"session_id":"s1","environment":"box","sequence":7,"extra":1,
		"request":{"type":"detach"}}}`))
	fmt.Println(errors.As(err, &fe), fe.Field)
	// Output:
	// 7 cancel <nil>
	// true operation.request.target_sequence
	// true operation.extra
}
