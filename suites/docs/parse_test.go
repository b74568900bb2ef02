package docs_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The convention the pages follow, held to what it promises: a directive that is wrong is an error,
// never a block that quietly runs or quietly does not.
var _ = Describe("reading a page's blocks", Label("smoke"), func() {
	It("runs sh and bash blocks, marks slow and skipped ones, and ignores others", func() {
		bs, err := parseDoc("p.md", "# t\n\n```sh\necho a\n```\n\n<!-- docs-test: slow -->\n```bash\necho b\n```\n"+
			"<!-- docs-test: skip needs a cluster -->\n\n```sh\necho c\n```\n```yaml\nx: 1\n```\n  ```sh\n  echo d\n  ```\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(bs).To(HaveLen(4))
		Expect(bs[0]).To(Equal(block{line: 3, body: "echo a", mode: run}))
		Expect(bs[1].mode).To(Equal(slow))
		Expect(bs[2].mode).To(Equal(skip))
		Expect(bs[2].reason).To(Equal("needs a cluster"))
		Expect(bs[3].body).To(Equal("echo d"), "an indented fence's indentation is removed")
	})

	It("refuses a skip without a reason, an unknown directive and a directive with no block after it", func() {
		_, err := parseDoc("p.md", "<!-- docs-test: skip -->\n```sh\necho a\n```\n")
		Expect(err).To(MatchError(ContainSubstring("p.md:1: docs-test skip without a reason")))
		_, err = parseDoc("p.md", "<!-- docs-test: slwo -->\n```sh\necho a\n```\n")
		Expect(err).To(MatchError(ContainSubstring(`unknown docs-test directive "slwo"`)))
		_, err = parseDoc("p.md", "<!-- docs-test: slow -->\nsome prose\n```sh\necho a\n```\n")
		Expect(err).To(MatchError(ContainSubstring("not followed by a fenced block")))
		_, err = parseDoc("p.md", "text\n<!-- docs-test: slow -->\n")
		Expect(err).To(MatchError(ContainSubstring("not followed by a fenced block")))
		_, err = parseDoc("p.md", "```sh\necho a\n")
		Expect(err).To(MatchError(ContainSubstring("never closed")))
		_, err = parseDoc("p.md", "<!-- docs-test: slow -->\n```yaml\na: 1\n```\n")
		Expect(err).To(MatchError(ContainSubstring("only sh, bash and shell blocks run")))
	})

	It("takes an output block only right after a shell block", func() {
		bs, err := parseDoc("p.md", "```sh\necho a\n```\n\n<!-- docs-test: output -->\n```\na\n```\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(bs).To(HaveLen(1))
		Expect(bs[0].expect).To(Equal([]string{"a"}))
		_, err = parseDoc("p.md", "```sh\necho a\n```\nprose\n<!-- docs-test: output -->\n```\na\n```\n")
		Expect(err).To(MatchError(ContainSubstring("follows no shell block")))
	})

	It("compares output line by line, with ... for any lines", func() {
		Expect(matchOutput([]string{"a", "b"}, "a\nb\n")).To(BeTrue())
		Expect(matchOutput([]string{"a", "b"}, "a\nc\n")).To(BeFalse())
		Expect(matchOutput([]string{"a"}, "a\nb\n")).To(BeFalse(), "an extra line is a difference")
		Expect(matchOutput([]string{"a", "...", "d"}, "a\nb\nc\nd\n")).To(BeTrue())
		Expect(matchOutput([]string{"...", "x"}, "a\nb\n")).To(BeFalse())
	})

	It("rewrites the page's lab names as whole words only", func() {
		bs, err := parseDoc("p.md", "```sh\nlab up fattree k=4 --name ft\nlab exec ft h0 -- ping h1\nlab run x.yaml --lab ft -o results/onft\nlab down ft\n```\n")
		Expect(err).NotTo(HaveOccurred())
		names := labNames(bs)
		Expect(names).To(Equal([]string{"ft"}))
		Expect(rename(bs[0].body, names, "-d1")).To(Equal(
			"lab up fattree k=4 --name ft-d1\nlab exec ft-d1 h0 -- ping h1\nlab run x.yaml --lab ft-d1 -o results/onft\nlab down ft-d1"))
	})
})
