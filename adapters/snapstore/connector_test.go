package snapstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
)

// TestValidate pins the option combinations Validate refuses, each naming
// its option.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		opts source.OptionValues
		key  string // "" when valid
	}{
		{source.OptionValues{"url": "https://edge1:8080"}, ""},
		{source.OptionValues{"url": "http://127.0.0.1:8080/", "token": source.NewSecret("t")}, ""},
		{source.OptionValues{"url": "https://e/", "ca_file": "/ca.pem", "client_cert": "/c.pem", "client_key": "/k.pem"}, ""},
		{source.OptionValues{}, "url"},
		{source.OptionValues{"url": "ftp://edge1"}, "url"},
		{source.OptionValues{"url": "edge1:8080"}, "url"},
		{source.OptionValues{"url": "https://user:pw@edge1"}, "url"},
		{source.OptionValues{"url": "https://edge1/?x=1"}, "url"},
		{source.OptionValues{"url": "https://edge1", "client_cert": "/c.pem"}, "client_key"},
		{source.OptionValues{"url": "https://edge1", "client_key": "/k.pem"}, "client_cert"},
		{source.OptionValues{"url": "http://edge1", "ca_file": "/ca.pem"}, "ca_file"},
		{source.OptionValues{"url": "https://edge1", "connect_timeout": time.Duration(0)}, "connect_timeout"},
		{source.OptionValues{"url": "https://edge1", "read_timeout": -time.Second}, "read_timeout"},
	} {
		err := connector{}.Validate(c.opts)
		if c.key == "" {
			if err != nil {
				t.Errorf("%v: %v", c.opts, err)
			}
			continue
		}
		var oe *source.OptionError
		if !errors.As(err, &oe) || oe.Key != c.key {
			t.Errorf("%v: %v, want an error naming %s", c.opts, err, c.key)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("%v: the error shows the URL's password: %v", c.opts, err)
		}
	}
}
