package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestConsole_FormShowsEveryViolation: an adapter or connection form
// refused for several fields lists each over the form (an adapter's
// inputs each marked); one refused for one field reads as before.
func TestConsole_FormShowsEveryViolation(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	b := newBrowser(t, f)
	form := url.Values{"name": {"p3"}, "connection": {"shop"}, "resource": {"products"}, "include": {"*"},
		"schedule": {"every hour"}, "notify": {"nobody"}}
	body := wantStatus(t, "three bad fields", b.post("/ui/adapters", form), http.StatusBadRequest)
	if !strings.Contains(body, `data-code="bad_schedule"`) || !strings.Contains(body, "3 problems") {
		t.Errorf("refused form:\n%s", body)
	}
	list := regexp.MustCompile(`(?s)<ul class="violations">(.*?)</ul>`).FindStringSubmatch(body)
	if list == nil {
		t.Fatalf("no list of violations:\n%s", body)
	}
	for _, want := range []string{`<code>notify[0]</code>`, `<code>resource</code>`, `<code>schedule</code>`, `data-code="bad_option"`} {
		if !strings.Contains(list[1], want) {
			t.Errorf("no %s in the list: %s", want, list[1])
		}
	}
	if n := strings.Count(list[1], "<li"); n != 3 {
		t.Errorf("%d items, want 3: %s", n, list[1])
	}
	for _, input := range []string{"resource", "schedule", "notify"} {
		if !regexp.MustCompile(`name="` + input + `"[^>]*aria-invalid="true"`).MatchString(body) {
			t.Errorf("input %s not marked invalid", input)
		}
	}
	if regexp.MustCompile(`name="name"[^>]*aria-invalid="true"`).MatchString(body) {
		t.Errorf("the name is marked invalid")
	}
	if _, err := f.svc.GetAdapter(t.Context(), "p3"); err == nil {
		t.Error("a refused adapter was saved")
	}

	// The connection form lists every option refused.
	body = wantStatus(t, "connection with bad options", b.post("/ui/connections", url.Values{"name": {"c9"}, "type": {"mysql"}, "opt.port": {"many"}, "extra": {"bogus=1"}}), http.StatusBadRequest)
	for _, want := range []string{`class="violations"`, "<code>options.port</code>", "<code>options.bogus</code>", "<code>options.user</code>"} {
		if !strings.Contains(body, want) {
			t.Errorf("connection form: no %s in:\n%s", want, body)
		}
	}
	// Each detail is said once beside its field, not named again in it.
	if strings.Contains(body, "option &#34;options.") {
		t.Errorf("connection form: a detail names its field again:\n%s", body)
	}

	form.Del("include")
	form.Del("notify")
	body = wantStatus(t, "one bad field", b.post("/ui/adapters", form), http.StatusBadRequest)
	if !strings.Contains(body, `<strong>bad_schedule</strong> (<code>schedule</code>): `) || strings.Contains(body, `class="violations"`) {
		t.Errorf("one bad field:\n%s", body)
	}
}
