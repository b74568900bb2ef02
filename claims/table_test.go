package claims

import "testing"

// The shipped table: every row the rule judges (R, O or N) says where in the paper its published value
// stands, and every row it does not judge says why. A row without them cannot be checked against the
// paper, so it fails here rather than standing in the table.
func TestEveryJudgedRowSaysWhere(t *testing.T) {
	cs, err := Load("../docs/claims.json")
	if err != nil {
		t.Fatal(err)
	}
	Rejudge(cs)
	for _, c := range cs {
		switch {
		case c.Verdict != "-" && c.Where == "":
			t.Errorf("%s is judged %s but says nowhere in the paper its published value stands (where)", c.ID, c.Verdict)
		case c.Verdict == "-" && c.Why == "":
			t.Errorf("%s is not judged and does not say why", c.ID)
		}
	}
}
