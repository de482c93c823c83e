package adapters

import "regexp"

// Origin says where a definition comes from.
type Origin string

const (
	// OriginConfig is a definition from the config file, read-only
	// through the API.
	OriginConfig Origin = "config"
	// OriginAPI is a definition made through the admin API, persisted in
	// the metadata table.
	OriginAPI Origin = "api"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func checkName(key, name string) error {
	if !nameRE.MatchString(name) {
		return &OptionError{Key: key, Msg: "want 1 to 128 letters, digits, '_', '.', '-', starting with a letter or digit"}
	}
	return nil
}
