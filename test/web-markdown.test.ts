/** The web app's markdown parser (web/src/markdown): the blocks answers use, partial text, and no HTML ever. */
import { describe, expect, it } from "vitest";
import { parseInline } from "../web/src/markdown/parse-inline.js";
import { parseMarkdown } from "../web/src/markdown/parse-markdown.js";

describe("the web app's markdown", () => {
  it("parses paragraphs, headings, lists (nested), fenced code, quotes and rules", () => {
    const blocks = parseMarkdown("# Tides\n\nThe moon:\n\n- pulls the sea\n- turns\n  1. once\n  2. twice\n\n```ts\nconst x = 1;\n```\n\n> quoted\n\n---");
    expect(blocks.map((block) => block.kind)).toEqual(["heading", "paragraph", "list", "code", "quote", "rule"]);
    expect(blocks[2]).toMatchObject({ kind: "list", isOrdered: false, items: [[{ kind: "paragraph" }], [{ kind: "paragraph" }, { kind: "list", isOrdered: true }]] });
    expect(blocks[3]).toEqual({ kind: "code", language: "ts", text: "const x = 1;" });
  });

  it("keeps a single plain paragraph as it is, line breaks included", () => {
    const text = 'This is the demo. You wrote: "Explain honest cancellation". Tidemark keeps what you saw.';
    expect(parseMarkdown(text)).toEqual([{ kind: "paragraph", content: [{ kind: "text", text }] }]);
    expect(parseInline("one\ntwo")).toEqual([{ kind: "text", text: "one" }, { kind: "break" }, { kind: "text", text: "two" }]);
  });

  it("parses partial text: an unclosed fence runs to the end", () => {
    expect(parseMarkdown("Look:\n\n```\nlet a")).toEqual([
      { kind: "paragraph", content: [{ kind: "text", text: "Look:" }] },
      { kind: "code", language: "", text: "let a" },
    ]);
  });

  it("parses emphasis, code and safe links, never underscores inside a word", () => {
    expect(parseInline("**bold** and *it* and `x*y`")).toEqual([
      { kind: "strong", children: [{ kind: "text", text: "bold" }] },
      { kind: "text", text: " and " },
      { kind: "emphasis", children: [{ kind: "text", text: "it" }] },
      { kind: "text", text: " and " },
      { kind: "code", text: "x*y" },
    ]);
    expect(parseInline("call send_email and search_catalog")).toEqual([{ kind: "text", text: "call send_email and search_catalog" }]);
    expect(parseInline("[docs](https://example.com/a)")).toEqual([{ kind: "link", href: "https://example.com/a", children: [{ kind: "text", text: "docs" }] }]);
  });

  it("never turns markup into anything but text: HTML, and javascript: links, stay text", () => {
    const hostile = '<script>alert(1)</script> <img src=x onerror="alert(2)"> [click](javascript:alert(3))';
    const [paragraph] = parseMarkdown(hostile);
    expect(paragraph).toEqual({ kind: "paragraph", content: [{ kind: "text", text: hostile }] });
  });
});
