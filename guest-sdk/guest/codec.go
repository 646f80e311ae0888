package guest

import (
	"github.com/wasmsched/wasmsched/abi"
)

// codec is where a call's bytes go through: the input buffer the host
// writes a request into, the encoder its reply is built in, and the
// decoder requests are read with. All three are reused from call to call,
// so a call allocates nothing for its framing.
type codec struct {
	in  []byte
	enc abi.Encoder
	dec abi.Decoder
}

// Input returns a buffer of size bytes for the next call's input.
func (g *Guest) Input(size int) []byte {
	if cap(g.codec.in) < size {
		g.codec.in = make([]byte, size)
	}
	return g.codec.in[:size]
}

// fail replaces the reply being built with an error reply.
func (g *Guest) fail(err error) []byte {
	g.codec.enc.Reset()
	g.codec.enc.U8(abi.ReplyError)
	g.codec.enc.String(err.Error())
	return g.codec.enc.B
}

// decodeWhole reads a whole request with read, refusing trailing bytes (a
// request of a later minor version this guest would misread); what names
// the request in the error.
func (c *codec) decodeWhole(in []byte, what string, read func(d *abi.Decoder)) error {
	c.dec.Reset(in, false)
	read(&c.dec)
	if err := c.dec.Err(); err != nil {
		return err
	}
	if c.dec.Remaining() != 0 {
		return newError(what + " has trailing bytes")
	}
	return nil
}
