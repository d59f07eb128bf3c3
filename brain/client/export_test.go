package client

// SetLineBound bounds the lines c reads on its streams (0: the default
// bound); it is set before c opens any.
func SetLineBound(c *Client, n int) { c.maxLine = n }
