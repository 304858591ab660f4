// The shape of /docs (issue 31): the introduction stays short so the reference leads with the
// operations, and the longer guides are tag sections of Redoc's menu. Redoc drops every tag that
// no x-tagGroups group names, so a tag left out of the groups would vanish from the page.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';

interface Tag {
  name: string;
  description?: string;
  'x-traitTag'?: boolean;
}
const document = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as {
  info: { description: string };
  tags: Tag[];
  'x-tagGroups': Array<{ name: string; tags: string[] }>;
  paths: Record<string, Record<string, { tags?: string[] }>>;
};

/** The most characters of introduction Redoc shows before the first operation. */
const MAX_INTRODUCTION = 10_000;

test(`info.description is at most ${MAX_INTRODUCTION.toLocaleString('en')} characters`, () => {
  const { length } = document.info.description;
  assert.ok(length <= MAX_INTRODUCTION, `info.description is ${length} characters: move a guide into a tag with x-traitTag`);
});

test('every tag is in exactly one x-tagGroups group, operations first, guides after', () => {
  const grouped = document['x-tagGroups'].flatMap((group) => group.tags);
  assert.deepEqual([...grouped].sort(), document.tags.map((tag) => tag.name).sort());
  assert.equal(new Set(grouped).size, grouped.length, 'no tag in two groups');
  const operationTags = new Set(Object.values(document.paths).flatMap((item) => Object.values(item).flatMap((op) => op.tags ?? [])));
  const [first, ...rest] = document['x-tagGroups'];
  assert.deepEqual(new Set(first!.tags), operationTags, 'the first group holds every operation tag and nothing else');
  for (const group of rest) for (const name of group.tags) assert.ok(!operationTags.has(name), `${name} is a guide, not an operation tag`);
});

test('each guide is a trait tag with its text, and the introduction links to it', () => {
  const guides = document.tags.filter((tag) => tag['x-traitTag']);
  assert.ok(guides.length >= 7, 'errors, rate limits, idempotency, pagination, sandbox, test scenarios, webhooks');
  for (const guide of guides) {
    assert.ok((guide.description ?? '').length > 100, `${guide.name} has its text`);
    // Redoc resolves #tag/<name, spaces as hyphens> to the tag's section (checked in a browser).
    const link = `](#tag/${guide.name.replaceAll(' ', '-')})`;
    assert.ok(document.info.description.includes(link), `the introduction links to ${guide.name}`);
    assert.match(guide.name, /^[\w -]+$/, 'a plain name, so the link holds; x-displayName may say more');
  }
});
