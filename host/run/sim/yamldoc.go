package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/wasmsched/wasmsched/host/internal/boundedread"
)

// splitter cuts a YAML stream into documents at "---" lines, as
// kubectl's reader does, counting lines so each document knows where it
// starts, and refusing a document (or a single line) longer than
// MaxObjectBytes once it gets there rather than after reading it whole.
// A document that looks like a List (a top-level items key) may grow to
// MaxListBytes instead: `kubectl get -o yaml` prints a whole cluster's
// pods as one such document, and each of its items is bounded after
// parsing.
type splitter struct {
	br   *bufio.Reader
	line int // lines consumed
}

var errObjectTooLarge = fmt.Errorf("document is larger than %s, the API server's limit for one object", boundedread.Size(MaxObjectBytes))

var errListTooLarge = fmt.Errorf("List document is larger than %s", boundedread.Size(MaxListBytes))

// next returns the next document and the line (from 1) it starts on, or
// io.EOF when there are no more.
func (s *splitter) next() (doc []byte, start int, err error) {
	start = s.line + 1
	limit := MaxObjectBytes
	for {
		line, err := s.readLine(limit - len(doc))
		if errors.Is(err, errObjectTooLarge) && limit == MaxListBytes {
			err = errListTooLarge
		}
		if len(line) > 0 {
			s.line++
			if isSeparator(line) {
				return doc, start, nil
			}
			doc = append(doc, line...)
			if limit < MaxListBytes && opensItems(line) {
				limit = MaxListBytes
			}
		}
		switch {
		case errors.Is(err, io.EOF) && len(doc) == 0:
			return nil, start, io.EOF
		case errors.Is(err, io.EOF):
			return doc, start, nil
		case err != nil:
			return nil, start, err
		}
	}
}

// readLine reads one line, newline included, of at most room bytes.
func (s *splitter) readLine(room int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := s.br.ReadSlice('\n')
		if len(line)+len(chunk) > room {
			return nil, errObjectTooLarge
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// opensItems reports whether a line starts a List's items: "items:" at
// the top level of YAML, or "items": at the top level of JSON as kubectl
// indents it (four spaces).
func opensItems(line []byte) bool {
	return bytes.HasPrefix(line, []byte("items:")) || bytes.HasPrefix(line, []byte(`    "items":`))
}

// isSeparator reports whether a line ends a document: "---" alone or
// followed by a comment.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// yamlError is a syntax error at a line of the document.
type yamlError struct {
	line int
	msg  string
}

func (e *yamlError) Error() string { return e.msg }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses one document into its root node (nil if empty). A
// panic in the parser on hostile input becomes an error: the host does
// not crash because of input.
func parseYAML(raw []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("not valid YAML (the parser failed: %v)", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return nil, &yamlError{line: n, msg: "not valid YAML: " + m[2]}
		}
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// valueAt returns the value of key in a mapping node, or nil.
func valueAt(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalarAt returns the scalar value of key in a mapping node, or "".
func scalarAt(m *yaml.Node, key string) string {
	if v := valueAt(m, key); v != nil && v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
		return v.Value
	}
	return ""
}
