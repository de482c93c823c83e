package transfer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Framing (X2): every message on a connection is
//
//	type u8 | flags u8 | length u32 big-endian | payload (length bytes)
//
// and a connection opens with HELLO from the sender and HELLO_OK from the
// receiver.
const (
	frameHello   byte = 1 // sender: magic, version, the id it meant to reach, its incarnation
	frameHelloOK byte = 2 // receiver: its id and incarnation
	frameBatch   byte = 3 // sender: a batch (batch.go); flags: compression, forwarded
	frameAck     byte = 4 // receiver: a batch applied; an END's carries the report
	frameNack    byte = 5 // receiver: a batch or HELLO not applied, with a code; the connection closes
	frameDone    byte = 6 // sender: a run is over (committed or not)
)

const (
	frameHeader = 6
	// maxFrame bounds a frame's payload: 256 MiB.
	maxFrame = 256 << 20
	// magic opens a HELLO; protocolVersion is the version spoken.
	magic           = "snapxfer"
	protocolVersion = 1
)

// Flags of a BATCH frame.
const (
	flagCompression byte = 0x03 // a Compression
	flagForwarded   byte = 0x80 // sent on by a node that does not own the partition (X6)
)

// Code is what a receiver answers a batch (an ACK is CodeApplied).
type Code uint8

// The codes.
const (
	// CodeApplied: the batch was applied (or had been: a duplicate).
	CodeApplied Code = iota
	// CodeRetry: not applied now (the owner is not ready, or tables
	// disagree); the sender sends it again after a pause.
	CodeRetry
	// CodeRewind: the receiver does not have the stream's earlier batches
	// (it restarted); the sender sends every stream of the run to it
	// again from seq 1 (X5).
	CodeRewind
	// CodeRefused: never to be applied; the run cannot finish.
	CodeRefused
	// codeForward is a Handler's answer only: send it on (X6).
	codeForward
)

var codeNames = [...]string{"applied", "retry", "rewind", "refused", "forward"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", c)
}

func putHeader(b []byte, typ, flags byte, n int) {
	b[0], b[1] = typ, flags
	binary.BigEndian.PutUint32(b[2:6], uint32(n))
}

// frame is one frame read from a connection.
type frame struct {
	typ, flags byte
	payload    []byte
	// raw is the whole frame, header included (a batch is forwarded as
	// it came).
	raw []byte
}

// readFrame reads one frame.
func readFrame(r *bufio.Reader) (frame, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(h[2:6])
	if n > maxFrame {
		return frame{}, fmt.Errorf("transfer: frame of %d bytes exceeds the limit of %d", n, maxFrame)
	}
	raw := make([]byte, frameHeader+int(n))
	copy(raw, h[:])
	if _, err := io.ReadFull(r, raw[frameHeader:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, err
	}
	return frame{typ: h[0], flags: h[1], payload: raw[frameHeader:], raw: raw}, nil
}

// newFrame returns a frame of typ with payload p.
func newFrame(typ, flags byte, p []byte) []byte {
	b := make([]byte, frameHeader, frameHeader+len(p))
	b = append(b, p...)
	putHeader(b, typ, flags, len(p))
	return b
}

// hello is the HELLO frame's content.
type hello struct {
	version     uint64
	target      string // the node the sender meant to reach
	incarnation string // the sender's
}

func (h hello) frame() []byte {
	p := appendString(nil, magic)
	p = binary.AppendUvarint(p, h.version)
	p = appendString(p, h.target)
	p = appendString(p, h.incarnation)
	return newFrame(frameHello, 0, p)
}

func parseHello(p []byte) (hello, error) {
	d := decoder{b: p}
	if string(d.bytes()) != magic {
		return hello{}, errors.New("transfer: not a snapstore transfer connection")
	}
	h := hello{version: d.uvarint(), target: string(d.bytes()), incarnation: string(d.bytes())}
	if d.err != nil {
		return hello{}, errors.New("transfer: corrupt HELLO")
	}
	return h, nil
}

// helloOK is the HELLO_OK frame's content.
type helloOK struct {
	id, incarnation string
}

func (h helloOK) frame() []byte {
	return newFrame(frameHelloOK, 0, appendString(appendString(nil, h.id), h.incarnation))
}

func parseHelloOK(p []byte) (helloOK, error) {
	d := decoder{b: p}
	h := helloOK{id: string(d.bytes()), incarnation: string(d.bytes())}
	if d.err != nil {
		return helloOK{}, errors.New("transfer: corrupt HELLO_OK")
	}
	return h, nil
}

// answer is the content of an ACK (code applied) or a NACK: the batch it
// answers, and the report (ACK of an END) or the reason (NACK).
type answer struct {
	stream Stream
	seq    uint64
	code   Code
	data   []byte // report or reason
}

func (a answer) frame() []byte {
	p := appendString(nil, a.stream.Dataset)
	p = binary.AppendVarint(p, a.stream.Txn)
	p = binary.AppendUvarint(p, uint64(a.stream.Partition))
	p = binary.AppendUvarint(p, a.seq)
	p = append(p, byte(a.code))
	p = appendBytes(p, a.data)
	typ := frameAck
	if a.code != CodeApplied {
		typ = frameNack
	}
	return newFrame(typ, 0, p)
}

func parseAnswer(p []byte) (answer, error) {
	d := decoder{b: p}
	a := answer{}
	a.stream.Dataset = string(d.bytes())
	a.stream.Txn = d.varint()
	a.stream.Partition = int(d.uvarint())
	a.seq = d.uvarint()
	a.code = Code(d.byte())
	if a.data = d.bytes(); len(a.data) == 0 {
		a.data = nil
	}
	if d.err != nil || a.code >= codeForward {
		return answer{}, errors.New("transfer: corrupt ACK or NACK")
	}
	return a, nil
}

// done is the DONE frame's content.
type done struct {
	run       RunKey
	committed bool
}

func (d done) frame() []byte {
	p := appendString(nil, d.run.Dataset)
	p = binary.AppendVarint(p, d.run.Txn)
	c := byte(0)
	if d.committed {
		c = 1
	}
	return newFrame(frameDone, 0, append(p, c))
}

func parseDone(p []byte) (done, error) {
	d := decoder{b: p}
	v := done{run: RunKey{Dataset: string(d.bytes()), Txn: d.varint()}, committed: d.byte() == 1}
	if d.err != nil {
		return done{}, errors.New("transfer: corrupt DONE")
	}
	return v, nil
}
