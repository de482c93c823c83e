package adapters

import (
	"fmt"

	"github.com/snapstore/snapstore/api"
)

// ValidateConfig checks config-file definitions without opening anything:
// every connection (type, sharing, each option), every adapter (name,
// resource, schedule, retention, guard, retries), that each adapter names a
// connection of the same file, and that no two adapters write one dataset.
// It returns one error per problem, each an *OptionError (errors.As) whose
// Key is the place in the file ("connections[0].options.pth",
// "adapters[1].schedule"), some also marked with a sentinel (ErrBadSchedule,
// ErrUnknownType, ErrConnectionNotFound, ErrDatasetTaken). An adapter that
// names a connection the file defines but rejected gets no follow-on
// error. New runs the same checks.
func ValidateConfig(conns []api.Connection, adapters []api.Adapter) []error {
	_, _, errs := parseConfig(conns, adapters)
	return errs
}

// parseConfig implements ValidateConfig and returns the parsed config
// definitions when there is no problem. Each problem is one error.
func parseConfig(conns []api.Connection, ads []api.Adapter) ([]*connDef, []*adapterDef, []error) {
	var errs []error
	var outConns []*connDef
	named := map[string]bool{} // every connection name the file gives, valid or not
	valid := map[string]*connDef{}
	for i, spec := range conns {
		prefix := fmt.Sprintf("connections[%d].", i)
		dup := definedTwice(named, spec.Name)
		if dup {
			errs = append(errs, &OptionError{Key: prefix + "name", Msg: fmt.Sprintf("connection %q defined twice", spec.Name)})
		}
		d, err := parseConnection(prefix, spec)
		if err != nil {
			errs = append(errs, splitErrors(err)...)
			continue
		}
		if dup {
			continue
		}
		valid[d.spec.Name] = d
		outConns = append(outConns, d)
	}
	var outAdapters []*adapterDef
	seen := map[string]bool{}
	writer := map[string]string{} // dataset -> the adapter that writes it
	for i, spec := range ads {
		prefix := fmt.Sprintf("adapters[%d].", i)
		dup := definedTwice(seen, spec.Name)
		if dup {
			errs = append(errs, &OptionError{Key: prefix + "name", Msg: fmt.Sprintf("adapter %q defined twice", spec.Name)})
		}
		a, err := parseAdapter(prefix, spec)
		if err != nil {
			errs = append(errs, splitErrors(err)...)
			a = nil
		}
		if dup {
			continue
		}
		if spec.Connection != "" && !named[spec.Connection] {
			errs = append(errs, optionErrorIs(&OptionError{Key: prefix + "connection",
				Msg: fmt.Sprintf("data connection %q is not defined in the file's connections (an adapter of the config file names a connection of the config file)", spec.Connection)}, ErrConnectionNotFound))
			continue
		}
		dataset := spec.Dataset
		if dataset == "" {
			dataset = spec.Name
		}
		if other, ok := writer[dataset]; ok && dataset != "" {
			key := prefix + "dataset"
			errs = append(errs, optionErrorIs(&OptionError{Key: key, Msg: fmt.Sprintf("dataset %q is already written by adapter %q; one adapter per dataset", dataset, other)}, ErrDatasetTaken))
			continue
		}
		writer[dataset] = spec.Name
		if d := valid[spec.Connection]; d != nil {
			if _, err := parseSourceOptions(prefix+"source_options.", d.conn, d.spec.Type, spec.SourceOptions); err != nil {
				errs = append(errs, splitErrors(err)...)
				continue
			}
		}
		if a != nil && valid[spec.Connection] != nil {
			outAdapters = append(outAdapters, a)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return outConns, outAdapters, nil
}

// definedTwice records name in seen and reports whether the file gave it
// before (an empty name is reported by checkName, not here).
func definedTwice(seen map[string]bool, name string) bool {
	dup := name != "" && seen[name]
	seen[name] = true
	return dup
}

// ValidateAdapter checks an API adapter definition without opening
// anything or reading the Service: every problem of parseAdapter (name,
// resource, schedule, retention, guard, retries, strategy, tables), each
// an *OptionError (a bad schedule marked ErrBadSchedule), joined.
// CreateAdapter and PutAdapter make the same checks, then those that need
// the Service and the source (the connection, the dataset, the resource).
func ValidateAdapter(spec api.Adapter) error {
	_, err := parseAdapter("", spec)
	return err
}
