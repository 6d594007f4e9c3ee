/** An answer's markdown as React elements: lists, code blocks and emphasis render as such, and every piece of text stays text. */
import { useMemo, type ReactNode } from "react";
import type { Inline } from "../markdown/parse-inline.js";
import { parseMarkdown, type Block } from "../markdown/parse-markdown.js";

export interface MarkdownTextProps {
  text: string;
  /** Shown at the end of the last block (the streaming caret). */
  tail?: ReactNode;
}

/** Renders `text`; React escapes every string, so markup in an answer is shown, never run. */
export function MarkdownText({ text, tail }: MarkdownTextProps) {
  const blocks = useMemo(() => parseMarkdown(text), [text]);
  if (blocks.length === 0) return <>{tail}</>;
  return <>{blocks.map((block, index) => renderBlock(block, index, index === blocks.length - 1 ? tail : undefined))}</>;
}

function renderBlock(block: Block, key: number, tail: ReactNode): ReactNode {
  switch (block.kind) {
    case "paragraph":
      return (
        <p key={key}>
          {renderInlines(block.content)}
          {tail}
        </p>
      );
    case "heading": {
      // Answers sit under the page's h2 and the panels' h3: their headings start at h4.
      const Heading = `h${Math.min(block.level + 3, 6)}` as "h4" | "h5" | "h6";
      return (
        <Heading key={key}>
          {renderInlines(block.content)}
          {tail}
        </Heading>
      );
    }
    case "code":
      return (
        <pre key={key} data-language={block.language || undefined}>
          <code>{block.text}</code>
          {tail}
        </pre>
      );
    case "list": {
      const items = block.items.map((item, index) => (
        <li key={index}>{item.map((child, childIndex) => renderBlock(child, childIndex, index === block.items.length - 1 && childIndex === item.length - 1 ? tail : undefined))}</li>
      ));
      return block.isOrdered ? (
        <ol key={key} start={block.start === 1 ? undefined : block.start}>
          {items}
        </ol>
      ) : (
        <ul key={key}>{items}</ul>
      );
    }
    case "quote":
      return <blockquote key={key}>{block.blocks.map((child, index) => renderBlock(child, index, index === block.blocks.length - 1 ? tail : undefined))}</blockquote>;
    case "rule":
      return <hr key={key} />;
  }
}

function renderInlines(inlines: readonly Inline[]): ReactNode[] {
  return inlines.map((inline, index) => {
    switch (inline.kind) {
      case "text":
        return inline.text;
      case "code":
        return <code key={index}>{inline.text}</code>;
      case "strong":
        return <strong key={index}>{renderInlines(inline.children)}</strong>;
      case "emphasis":
        return <em key={index}>{renderInlines(inline.children)}</em>;
      case "link":
        return (
          <a key={index} href={inline.href} target="_blank" rel="noopener noreferrer">
            {renderInlines(inline.children)}
          </a>
        );
      case "break":
        return <br key={index} />;
    }
  });
}
