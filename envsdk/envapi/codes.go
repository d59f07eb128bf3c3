package envapi

// Failure codes used by providers and by Brain. The set is open: a provider
// may answer any identifier, and Brain passes it through to the Tool result
// unchanged. These are the ones the protocol and the reference providers give
// a meaning to.
const (
	// CodeUnsupported answers an operation, descriptor or method the
	// provider does not implement.
	CodeUnsupported = "unsupported"
	// CodeEnvironmentFailed answers an unexpected provider error or panic.
	CodeEnvironmentFailed = "environment_failed"
	// CodeEnvironmentError is the default code of a typed provider error
	// that names none.
	CodeEnvironmentError = "environment_error"
	// CodeInvalidConfiguration answers setup configuration that does not
	// validate.
	CodeInvalidConfiguration = "invalid_configuration"
	// CodeInvalidInput answers an execute or call input that does not
	// validate.
	CodeInvalidInput = "invalid_input"
	// CodeInvalidOutput reports output that is not what the contract says.
	CodeInvalidOutput = "invalid_output"
	// CodeTimeout reports that the invocation's deadline expired.
	CodeTimeout = "timeout"
	// CodeCancelled reports an explicit cancel of the invocation.
	CodeCancelled = "cancelled"
	// CodeUnavailable answers an operation on a binding that is unknown or
	// torn down.
	CodeUnavailable = "unavailable"
	// CodeResourceLost reports that a resource the binding owned vanished;
	// it is never silently re-created.
	CodeResourceLost = "resource_lost"
	// CodeBusy answers an operation that conflicts with running work.
	CodeBusy = "busy"
	// CodeAlreadyExists answers a second setup of the same binding.
	CodeAlreadyExists = "already_exists"
	// CodeAllocationFailed reports a failed lazy allocation; it stays
	// failed until the binding is reset.
	CodeAllocationFailed = "allocation_failed"
	// CodePreparationFailed reports a failed, sticky implementation
	// preparation.
	CodePreparationFailed = "preparation_failed"
	// CodeExecutionFailed reports that the executed program failed.
	CodeExecutionFailed = "execution_failed"
	// CodeOutputLimit reports output beyond the provider's cap.
	CodeOutputLimit = "output_limit"
	// CodeCleanupFailed reports a result that could not be cleaned up.
	CodeCleanupFailed = "cleanup_failed"
	// CodeNoCallback answers an execute that needs a callback grant it did
	// not receive.
	CodeNoCallback = "no_callback"
	// CodePathEscape answers a file path that leaves the workspace.
	CodePathEscape = "path_escape"
	// CodeNotFound answers a file or object that does not exist.
	CodeNotFound = "not_found"
)
