package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/internal/boundedread"
	"github.com/snapstore/snapstore/server"
	"go.yaml.in/yaml/v4"
)

// definition is a connection or adapter definition read from a YAML file
// for `adapters create` and `connections create`: one mapping with the keys
// of an entry of the config file's adapters or connections list, which
// are the API body's keys. It is sent to the API as read; the API checks
// it, and an error naming a field (body.retention.ttl) is placed on its
// line of the file.
type definition struct {
	file  string
	body  map[string]any
	lines map[string]int // "retention.ttl" -> its line

	// values counts the values value made, aliases expanded; expanding
	// marks the anchored nodes whose expansion is under way. Together
	// they stop a file whose aliases refer to themselves or multiply
	// ("billion laughs") before it fills the memory.
	values    int
	expanding map[*yaml.Node]bool
}

// maxDefinitionBytes bounds a definition file, and so the values its
// aliases may expand to: the server takes no larger body
// (server.MaxBodyBytes), and each value is at least two bytes of JSON
// (itself and a comma).
const maxDefinitionBytes = server.MaxBodyBytes

// readDefinition reads the definition in file ("-" for stdin).
func readDefinition(file string) (*definition, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = boundedread.All(stdin, maxDefinitionBytes)
		file = "stdin"
	} else {
		data, err = boundedread.File(file, maxDefinitionBytes)
	}
	if errors.Is(err, boundedread.ErrTooLarge) {
		err = fmt.Errorf("%w, more than the server takes", err)
	}
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("reading the definition: %w", err)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", file, err)}
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: want one mapping of keys (name: ..., connection: ...), as an entry of the config file's list", file)}
	}
	d := &definition{file: file, lines: map[string]int{}, expanding: map[*yaml.Node]bool{}}
	v, err := d.value(root.Content[0], "")
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	d.body = v.(map[string]any)
	return d, nil
}

// value converts n, at key path, to the JSON value it is.
func (d *definition) value(n *yaml.Node, path string) (any, error) {
	if d.values++; d.values > maxDefinitionBytes/2 {
		return nil, fmt.Errorf("%s line %d: %s: the aliases expand to more than the server takes (%d bytes)", d.file, n.Line, path, maxDefinitionBytes)
	}
	if n.Kind == yaml.AliasNode {
		if d.expanding[n.Alias] {
			return nil, fmt.Errorf("%s line %d: %s: alias *%s refers to a value holding it", d.file, n.Line, path, n.Value)
		}
		n = n.Alias
	}
	if n.Anchor != "" && !d.expanding[n] {
		d.expanding[n] = true
		defer delete(d.expanding, n)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			sub := config.JoinKey(path, k.Value)
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("%s line %d: key %s given twice", d.file, k.Line, sub)
			}
			d.lines[sub] = k.Line
			v, err := d.value(n.Content[i+1], sub)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			v, err := d.value(item, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			b, err := strconv.ParseBool(strings.ToLower(n.Value))
			if err != nil {
				return n.Value, nil
			}
			return b, nil
		case "!!int":
			if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
				return i, nil
			}
		case "!!float":
			if f, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f, nil
			}
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("%s line %d: %s: not a value", d.file, n.Line, path)
}

// name is the definition's name, "" when it has none.
func (d *definition) name() string {
	s, _ := d.body["name"].(string)
	return s
}

// place puts the line of the file on an API error that names a body
// field: "... (adapter.yaml line 7)"; on each violation of one that
// lists several.
func (d *definition) place(err error) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	if len(ae.Problem.Errors) > 1 {
		ae.Places = make([]string, len(ae.Problem.Errors))
		for i, v := range ae.Problem.Errors {
			if l := d.line(v.Field); l > 0 {
				ae.Places[i] = fmt.Sprintf("%s line %d", d.file, l)
			}
		}
		return err
	}
	if l := d.line(ae.Problem.Field); l > 0 {
		return fmt.Errorf("%w (%s line %d)", err, d.file, l)
	}
	return err
}

// line is the line of the file that gives field (body.retention.ttl, or
// the key enclosing it), 0 when none does.
func (d *definition) line(field string) int {
	if field == "" {
		return 0
	}
	for k := strings.TrimPrefix(field, "body."); k != ""; k = config.ParentKey(k) {
		if l, ok := d.lines[k]; ok {
			return l
		}
	}
	return 0
}
