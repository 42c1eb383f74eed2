import test from 'ava';
import { compileClient, findRedocly, generatedClientIsCurrent, lint, publishedDocument } from '../support/openapi-contract.ts';

// The published document (`svc openapi`) as its consumers meet it; `npm run openapi:check` prints the same counts.
const document = await publishedDocument();
const redocly = findRedocly();
const lintTitle = "Redocly's recommended rules find no error and no warning in the document";

if ('unavailable' in redocly) {
  console.warn(`openapi-contract: Redocly lint skipped: ${redocly.unavailable}`);
  test.skip(`${lintTitle} (skipped: ${redocly.unavailable})`, () => {});
} else {
  test(lintTitle, (t) => {
    t.log(`linted with ${redocly.how}`);
    const result = lint(redocly, document);
    t.deepEqual(
      result.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`),
      [],
    );
    t.is(result.errors + result.warnings, 0);
  });
}

test('svc/client with the types openapi-typescript generates from the document compiles under tsc --strict, unrewritten', async (t) => {
  const { lines, errors } = await compileClient(document);
  t.true(lines > 1000, `${lines} lines generated`);
  t.deepEqual(errors.slice(0, 20), []);
});

test('client/generated/openapi.ts is what the document generates (else: npm run client:generate)', async (t) => {
  t.true(
    await generatedClientIsCurrent(document),
    "the committed client types differ from the server's document: run `npm run client:generate` and commit the result",
  );
});
