import test from 'ava';
import {
  ConditionError,
  MAX_CONDITION_DEPTH,
  MAX_CONDITION_LENGTH,
  checkCondition,
  evaluateCondition,
  parseCondition,
  referencedSteps,
  type ConditionContext,
} from '../../domain/manifest/conditions.ts';

const ctx: ConditionContext = {
  inputs: { env: 'prod', count: 3, ratio: 0.5, flag: true, off: false, empty: '', zero: 0, nothing: null, tags: ['a', 'b'], nested: { x: { y: 'deep' } } },
  event: {
    type: 'vcshost.push',
    payload: {
      ref: 'refs/heads/release/1.2',
      branch: 'release/1.2',
      labels: ['deploy', 'urgent'],
      commits: [
        { id: 'c1', message: 'fix: thing' },
        { id: 'c2', message: 'feat: other' },
      ],
      pull_request: { base: { ref: 'main' }, title: 'WIP: stuff' },
      'odd key': 'spaced',
    },
  },
  steps: {
    build: { status: 'succeeded', result: { tag: 'v1.2.3', images: ['api', 'web'] } },
    tests: { status: 'succeeded', result: { passed: 120, failed: 0 } },
    'run-lint': { status: 'failed', result: null },
  },
};

const ev = (text: string, context: ConditionContext = ctx) => evaluateCondition(parseCondition(text), context);

/** The ConditionError parseCondition throws for `text`. */
function errorOf(text: string): ConditionError {
  const err = (() => {
    try {
      parseCondition(text);
    } catch (e) {
      return e;
    }
    throw new Error(`expected ${JSON.stringify(text)} to fail`);
  })();
  if (!(err instanceof ConditionError)) throw err;
  return err;
}

test('literals and their truthiness', (t) => {
  for (const [text, want] of [
    ['true', true],
    ['false', false],
    ['null', false],
    ['1', true],
    ['0', false],
    ['-1', true],
    ['2.5', true],
    ['0.0', false],
    ['1e3 == 1000', true],
    ['1.5E-1 == 0.15', true],
    ["'x'", true],
    ["''", false],
    ['""', false],
    ['"a"', true],
    [`'it\\'s' == "it's"`, true],
    [`"say \\"hi\\"" == 'say "hi"'`, true],
    [`'a\\nb' == "a\\u000ab"`, true],
    [`'\\x41\\u{1F600}' == "A😀"`, true],
    [`'\\\\' == "\\\\"`, true],
    [`'tab\\there' != 'tab there'`, true],
  ] as const) {
    t.is(ev(text), want, text);
  }
});

test('paths read inputs, the event and earlier steps; missing paths are null', (t) => {
  t.true(ev("inputs.env == 'prod'"));
  t.true(ev("event.payload.branch == 'release/1.2'"));
  t.true(ev("steps.build.status == 'succeeded'"));
  t.true(ev("steps.build.result.tag == 'v1.2.3'"));
  t.true(ev("inputs.nested.x.y == 'deep'"));
  t.true(ev("steps.run-lint.status == 'failed'"), 'hyphenated step names');
  for (const missing of [
    'inputs.nope',
    'inputs.nope.deeper.still',
    'steps.deploy.status',
    'event.payload.ref.length',
    'inputs.count.x',
    'steps.run-lint.result.tag',
    'inputs.tags.length',
  ]) {
    t.true(ev(`${missing} == null`), missing);
    t.false(ev(missing), missing);
  }
  t.true(ev('inputs.nothing == null'));
  t.true(ev("inputs.env == 'prod'", { inputs: { env: 'prod' } }), 'roots may be left out');
  t.true(ev('event.payload == null && steps.x == null', { inputs: {} }));
  t.true(ev('inputs == null', {}));
});

test('bracket access: array indexes, quoted keys and computed keys', (t) => {
  t.true(ev("inputs.tags[0] == 'a'"));
  t.true(ev("inputs.tags[1] == 'b'"));
  t.true(ev('inputs.tags[2] == null'));
  t.true(ev('inputs.tags[-1] == null'));
  t.true(ev('inputs.tags[0.5] == null'));
  t.true(ev("inputs.tags['0'] == null"), 'arrays take numbers only');
  t.true(ev("inputs['env'] == 'prod'"));
  t.true(ev(`event.payload["odd key"] == 'spaced'`));
  t.true(ev("steps['run-lint'].status == 'failed'"));
  t.true(ev("event.payload.commits[1].message == 'feat: other'"));
  t.true(ev("event.payload['commits'][0]['id'] == 'c1'"));
  t.true(ev("inputs.list[inputs.i] == 'web'", { inputs: { list: ['api', 'web'], i: 1 } }), 'computed index');
  t.true(ev("inputs.map[inputs.k] == 'v'", { inputs: { map: { key: 'v' }, k: 'key' } }), 'computed key');
  t.true(ev('inputs.tags[len(inputs.tags) == 2] == null'), 'a boolean index reads nothing');
  t.true(ev("inputs.map[1] == 'one'", { inputs: { map: { '1': 'one' } } }), 'integer keys on objects');
  t.true(ev('inputs.env[0] == null'), 'strings are not indexed');
});

test('== and != compare type and value; arrays and objects deeply', (t) => {
  t.true(ev('1 == 1'));
  t.true(ev('1 == 1.0'));
  t.false(ev("1 == '1'"));
  t.true(ev("1 != '1'"));
  t.false(ev('true == 1'));
  t.false(ev("null == ''"));
  t.false(ev('null == 0'));
  t.false(ev('null == false'));
  t.true(ev('null == null'));
  t.true(ev("'a' != 'b'"));
  t.true(ev('inputs.tags == steps.x.tags', { inputs: { tags: ['a', { b: 1 }] }, steps: { x: { tags: ['a', { b: 1 }] } } }));
  t.false(ev('inputs.tags == steps.x.tags', { inputs: { tags: ['a', { b: 1 }] }, steps: { x: { tags: ['a', { b: 2 }] } } }));
  t.false(ev('inputs.a == inputs.b', { inputs: { a: [], b: {} } }));
  t.true(ev('inputs.a == inputs.b', { inputs: { a: { x: 1, y: [2] }, b: { y: [2], x: 1 } } }));
});

test('< <= > >= compare numbers with numbers and strings with strings, else false', (t) => {
  t.true(ev('inputs.count > 2'));
  t.true(ev('inputs.count >= 3'));
  t.false(ev('inputs.count > 3'));
  t.true(ev('inputs.count < 4'));
  t.true(ev('inputs.count <= 3'));
  t.true(ev('inputs.ratio < 1'));
  t.true(ev('-2 < -1'));
  t.true(ev("'abc' < 'abd'"));
  t.true(ev("'b' >= 'a'"));
  for (const mismatch of ["inputs.count > '2'", "'3' >= 3", 'null < 1', 'null >= 0', 'true > false', 'inputs.tags > 1', 'inputs.missing <= 0']) {
    t.false(ev(mismatch), mismatch);
    t.true(ev(`!(${mismatch})`), `!(${mismatch})`);
  }
});

test('&& || ! give booleans and follow truthiness', (t) => {
  t.true(ev('true && 1'));
  t.false(ev("1 && ''"));
  t.true(ev("0 || 'x'"));
  t.false(ev('0 || null'));
  t.true(ev('!null'));
  t.true(ev('!0'));
  t.true(ev("!''"));
  t.false(ev('!inputs.tags'));
  t.false(ev('!inputs.nested'));
  t.true(ev('!!inputs.flag'));
  t.true(ev("(1 && 'x') == true"), '&& yields a boolean, not an operand');
  t.true(ev("(0 || 'x') == true"), '|| yields a boolean, not an operand');
  t.true(ev('(inputs.missing || inputs.zero) == false'));
  t.true(ev('!inputs.missing == true'));
});

test('precedence: ! over comparisons over && over ||', (t) => {
  t.true(ev('true || false && false'), 'a || (b && c)');
  t.false(ev('(true || false) && false'));
  t.true(ev('false && false || true'));
  t.true(ev("inputs.env == 'dev' || inputs.env == 'prod' && inputs.count == 3"));
  t.true(ev('!false && true'));
  t.false(ev('!(false || true)'));
  t.true(ev('1 < 2 == 3 < 4'), 'relational binds tighter than equality');
  t.true(ev('!inputs.off == true'), '! binds tighter than ==');
  t.true(ev('( ( (true) ) )'));
});

test('&& and || short-circuit', (t) => {
  const touched: string[] = [];
  const watched = (name: string, value: unknown) =>
    new Proxy(
      { v: value },
      {
        getOwnPropertyDescriptor(target, key) {
          if (!touched.includes(name)) touched.push(name);
          return Reflect.getOwnPropertyDescriptor(target, key);
        },
      },
    );
  // The proxies' prototype is Object.prototype, so they read as plain objects.
  const context = { inputs: { yes: watched('yes', true), no: watched('no', false), yes2: watched('yes2', true), no2: watched('no2', false) } };
  t.true(ev('inputs.yes.v || inputs.no.v', context));
  t.deepEqual(touched.splice(0), ['yes'], 'right side of || not evaluated');
  t.false(ev('inputs.no.v && inputs.yes.v', context));
  t.deepEqual(touched.splice(0), ['no'], 'right side of && not evaluated');
  t.true(ev('inputs.no.v || inputs.no2.v || inputs.yes.v || inputs.yes2.v', context));
  t.deepEqual(touched.splice(0), ['no', 'no2', 'yes']);
  t.false(ev('inputs.yes.v && inputs.no.v && inputs.yes2.v', context));
  t.deepEqual(touched.splice(0), ['yes', 'no']);
});

test('functions: contains, startsWith, endsWith, exists, len', (t) => {
  t.true(ev("contains(event.payload.labels, 'deploy')"));
  t.false(ev("contains(event.payload.labels, 'dep')"), 'arrays match whole elements');
  t.true(ev("contains(event.payload.pull_request.title, 'WIP')"));
  t.false(ev("contains(event.payload.pull_request.title, 'wip')"), 'case-sensitive');
  t.false(ev("contains('123', 2)"), 'no coercion');
  t.true(ev('contains(inputs.list, 2)', { inputs: { list: [1, 2, 3] } }));
  t.false(ev("contains(inputs.list, '2')", { inputs: { list: [1, 2, 3] } }));
  t.true(ev('contains(inputs.list, inputs.item)', { inputs: { list: [{ a: 1 }, { a: 2 }], item: { a: 2 } } }));
  t.false(ev("contains(inputs.missing, 'x')"));
  t.false(ev("contains(inputs.nested, 'x')"), 'objects are not searched');
  t.true(ev("startsWith(event.payload.ref, 'refs/heads/release/')"));
  t.false(ev("startsWith(event.payload.ref, 'release/')"));
  t.true(ev("endsWith(steps.build.result.tag, '.3')"));
  t.false(ev("endsWith(inputs.count, '3')"));
  t.false(ev("startsWith(inputs.missing, '')"));
  t.true(ev('exists(inputs.env)'));
  t.true(ev('exists(inputs.nothing)'), 'present but null exists');
  t.false(ev('exists(inputs.nope)'));
  t.false(ev('exists(inputs.nope.deeper)'));
  t.true(ev('exists(steps.build.result.images[1])'));
  t.false(ev('exists(steps.build.result.images[2])'));
  t.false(ev('exists(inputs.constructor)'));
  t.false(ev('exists(inputs.toString)'));
  t.true(ev('!exists(steps.deploy)'));
  t.true(ev('len(event.payload.commits) == 2'));
  t.true(ev("len('héllo') == 5"));
  t.true(ev("len('😀') == 1"), 'code points, not UTF-16 units');
  t.true(ev('len(inputs.nested) == 1'));
  t.true(ev('len(inputs.missing) == 0'));
  t.true(ev('len(inputs.count) == null'));
  t.true(ev('len(inputs.tags) > 0 && len(inputs.empty) == 0'));
});

test('prototype pollution and odd values read as null', (t) => {
  for (const text of [
    'inputs.__proto__',
    'inputs.constructor',
    'inputs.constructor.constructor',
    "inputs['constructor']['constructor']",
    'inputs.prototype',
    'inputs.toString',
    'inputs.hasOwnProperty',
    'inputs.tags.length',
    'inputs.tags.constructor',
    "inputs.tags['map']",
    'event.__proto__.polluted',
    'inputs.env.length',
    'steps.__proto__',
  ]) {
    t.false(ev(text), text);
    t.true(ev(`${text} == null`), `${text} == null`);
  }
  // JSON.parse makes __proto__ an own property; it still reads as null.
  const parsed = JSON.parse('{"__proto__": {"admin": true}, "constructor": {"prototype": 1}}') as unknown;
  t.true(ev('inputs.__proto__ == null && inputs.constructor == null && len(inputs) == 0', { inputs: parsed }));
  t.false(ev('inputs.__proto__.admin', { inputs: parsed }));
  // Getters never run; class instances and functions are opaque.
  let ran = false;
  const withGetter = Object.defineProperty({}, 'secret', { get: () => ((ran = true), 'x'), enumerable: true });
  t.false(ev("inputs.secret == 'x'", { inputs: withGetter }));
  t.false(ran);
  class Thing {
    name = 'thing';
  }
  t.true(ev('inputs.obj == null && inputs.obj.name == null', { inputs: { obj: new Thing() } }));
  t.true(ev('inputs.fn == null && inputs.date == null && inputs.map == null', { inputs: { fn: () => 1, date: new Date(), map: new Map([['a', 1]]) } }));
  t.true(ev("inputs.obj.name == 'ok'", { inputs: { obj: Object.assign(Object.create(null), { name: 'ok' }) } }), 'null-prototype objects are plain');
  // Nothing was polluted along the way.
  t.is(({} as Record<string, unknown>).polluted, undefined);
  t.is(({} as Record<string, unknown>).admin, undefined);
});

test('${{ … }} wrapping is accepted and stripped', (t) => {
  t.true(ev("${{ inputs.env == 'prod' }}"));
  t.true(ev('  ${{inputs.count==3}}  '));
  t.is(checkCondition('${{ inputs.env'), "unterminated '${{' at 0 (expected '}}' at the end)");
  t.is(checkCondition('${{ }}'), 'empty condition at 4');
  t.is(checkCondition('${{ ) }}'), "unexpected ')' at 4", 'positions count from the text as written');
  t.regex(checkCondition('inputs.a && ${{ inputs.b }}') ?? '', /^unexpected '\$' at 12 \(a \$\{\{ … \}\} wrapper must enclose the whole condition\)$/);
});

test('syntax errors name what and where', (t) => {
  const cases: [string, string][] = [
    ["(inputs.env == 'prod'))", "unexpected ')' at 22"],
    ["inputs.env == 'prod' )", "unexpected ')' at 21"],
    ['inputs.a = 1', "unexpected '=' at 9 (use == to compare)"],
    ['inputs.a & inputs.b', `unexpected '&' at 9 (use && for "and")`],
    ['inputs.a | inputs.b', `unexpected '|' at 9 (use || for "or")`],
    ['inputs.a ==', 'unexpected end of condition at 11'],
    ['', 'empty condition at 0'],
    ['   ', 'empty condition at 3'],
    ['(inputs.a', "unexpected end of condition at 9 (expected ')' to close '(' at 0)"],
    ['inputs.a inputs.b', "unexpected 'inputs' at 9"],
    ["'abc", 'unterminated string starting at 0'],
    ["'ab\\q'", "invalid escape '\\q' at 3"],
    ["'\\u12'", "invalid escape '\\u12'' at 1"],
    ['1abc == 1', "invalid number '1abc' at 0"],
    ['1.2.3', "invalid number '1.2.3' at 0"],
    ['foo == 1', "unknown name 'foo' at 0 (paths start with inputs, event, steps; quote strings)"],
    ['inputs.env == prod', "unknown name 'prod' at 14 (paths start with inputs, event, steps; quote strings)"],
    ['len == 1', "unknown name 'len' at 0 (len is a function: write len(…))"],
    ["matches(inputs.a, 'x')", "unknown function 'matches' at 0 (functions: contains, startsWith, endsWith, exists, len)"],
    ['contains(inputs.a)', 'contains() takes 2 arguments but got 1 at 0'],
    ['len()', 'len() takes 1 argument but got 0 at 0'],
    ["x || startsWith('a', 'b', 'c')", "unknown name 'x' at 0 (paths start with inputs, event, steps; quote strings)"],
    ["true || startsWith('a', 'b', 'c')", 'startsWith() takes 2 arguments but got 3 at 8'],
    ["exists('inputs.a')", 'exists() takes a path such as inputs.name at 7'],
    ['contains(inputs.a, 1', "unexpected end of condition at 20 (expected ')' to close contains()"],
    ['steps.build.0', "unexpected '0' at 12 (expected a name after '.'; use [0] for an index)"],
    ['inputs.', "unexpected end of condition at 7 (expected a name after '.'; use […] for an index)"],
    ['inputs[]', "unexpected ']' at 7 (expected an index or key)"],
    ['inputs[0', "unexpected end of condition at 8 (expected ']' to close '[' at 6)"],
    ['inputs.a == 1 == 2', "unexpected '==' at 14 (comparisons do not chain; add parentheses)"],
    ['1 < 2 < 3', "unexpected '<' at 6 (comparisons do not chain; add parentheses)"],
    ['- 1', "unexpected '-' at 0"],
    ['inputs.a == #', "unexpected '#' at 12"],
    ['inputs.a\u0007', 'unexpected "\\u0007" at 8'],
    ['true && ,', "unexpected ',' at 8"],
    ["inputs.a == 'x' 'y'", `unexpected string 'y' at 16`],
  ];
  for (const [text, message] of cases) {
    t.is(checkCondition(text), message, text);
  }
  const err = errorOf("(inputs.env == 'prod'))");
  t.is(err.position, 22);
  t.is(err.name, 'ConditionError');
  t.true(err instanceof Error);
});

test('checkCondition returns null for valid text and accepts YAML booleans', (t) => {
  t.is(checkCondition("inputs.env == 'prod'"), null);
  t.is(checkCondition(true), null);
  t.is(checkCondition(false), null);
  t.is(checkCondition(42), 'condition must be a string expression or a boolean');
  t.is(checkCondition({ a: 1 }), 'condition must be a string expression or a boolean');
  t.true(evaluateCondition(parseCondition(true), {}));
  t.false(evaluateCondition(parseCondition(false), ctx));
  t.true(evaluateCondition("inputs.env == 'prod'", ctx), 'evaluateCondition also takes text');
});

test('length limit', (t) => {
  const base = "inputs.env == 'prod'";
  const atLimit = base + ' '.repeat(MAX_CONDITION_LENGTH - base.length);
  t.is(atLimit.length, MAX_CONDITION_LENGTH);
  t.is(checkCondition(atLimit), null);
  t.is(checkCondition(atLimit + ' '), `condition is too long (${MAX_CONDITION_LENGTH + 1} characters, limit ${MAX_CONDITION_LENGTH})`);
  t.is(errorOf('x'.repeat(100_000)).position, null);
  // A long flat chain within the limit is fine (and not a deep tree).
  const chain = Array.from({ length: 300 }, () => 'true').join('&&');
  t.true(chain.length < MAX_CONDITION_LENGTH);
  t.true(ev(chain));
});

test('nesting depth limit', (t) => {
  const parens = (n: number) => '('.repeat(n) + 'true' + ')'.repeat(n);
  t.is(checkCondition(parens(MAX_CONDITION_DEPTH)), null);
  t.true(ev(parens(MAX_CONDITION_DEPTH)));
  t.is(checkCondition(parens(MAX_CONDITION_DEPTH + 1)), `condition is nested too deeply at ${MAX_CONDITION_DEPTH} (limit ${MAX_CONDITION_DEPTH} levels)`);
  t.is(checkCondition('!'.repeat(MAX_CONDITION_DEPTH) + 'true'), null);
  t.regex(checkCondition('!'.repeat(MAX_CONDITION_DEPTH + 1) + 'true') ?? '', /^condition is nested too deeply at 50 /);
  const calls = (n: number) => 'len('.repeat(n) + 'inputs' + ')'.repeat(n);
  t.is(checkCondition(calls(MAX_CONDITION_DEPTH)), null);
  t.regex(checkCondition(calls(MAX_CONDITION_DEPTH + 1)) ?? '', /^condition is nested too deeply at 203 /);
  const brackets = (n: number) => 'inputs['.repeat(n) + '0' + ']'.repeat(n);
  t.regex(checkCondition(brackets(MAX_CONDITION_DEPTH + 1)) ?? '', /^condition is nested too deeply/);
  t.regex(checkCondition('(!'.repeat(30) + 'true' + ')'.repeat(30)) ?? '', /^condition is nested too deeply/, 'mixed kinds count together');
});

test('referencedSteps lists the steps a condition reads', (t) => {
  t.deepEqual(
    referencedSteps(parseCondition("steps.build.status == 'succeeded' && steps['run-lint'].status != 'failed' || steps.build.result.tag == inputs.x")),
    ['build', 'run-lint'],
  );
  t.deepEqual(referencedSteps(parseCondition("inputs.list[steps.idx.result.n] == 'a' && exists(steps.opt)")), ['idx', 'opt']);
  t.deepEqual(referencedSteps(parseCondition("inputs.env == 'prod'")), []);
});

test('realistic workflow conditions', (t) => {
  const push = (branch: string, over: Partial<Record<string, unknown>> = {}): ConditionContext => ({
    inputs: { env: 'prod', dry_run: false, services: ['api', 'web'] },
    event: {
      type: 'vcshost.push',
      source: 'vcshost',
      payload: { ref: `refs/heads/${branch}`, branch, commits: [{ message: 'feat: x [deploy]' }], head_commit: { message: 'feat: x [deploy]' } },
    },
    steps: {
      tests: { status: 'succeeded', result: { failed: 0 } },
      build: { status: 'succeeded', result: { tag: 'v2.0.0', build_id: 'bld_1' } },
      lint: { status: 'failed' },
    },
    ...over,
  });
  const pr = (action: string, labels: string[]): ConditionContext => ({
    inputs: {},
    event: {
      type: 'vcshost.pull_request',
      payload: { action, number: 7, labels, pull_request: { base: { ref: 'main' }, head: { ref: 'feat/x' }, title: 'Add x' } },
    },
    steps: {},
  });
  const table: [string, ConditionContext, boolean][] = [
    ["inputs.env == 'prod' && steps.tests.status == 'succeeded'", push('main'), true],
    ["inputs.env == 'prod' && steps.tests.status == 'succeeded'", push('main', { steps: { tests: { status: 'failed' } } }), false],
    ["inputs.env == 'prod' && steps.tests.status == 'succeeded'", push('main', { steps: {} }), false],
    ["contains(event.payload.labels, 'deploy')", pr('labeled', ['deploy', 'docs']), true],
    ["contains(event.payload.labels, 'deploy')", pr('labeled', ['docs']), false],
    ["contains(event.payload.labels, 'deploy')", push('main'), false],
    ["${{ event.payload.branch == 'main' || startsWith(event.payload.ref, 'refs/heads/release/') }}", push('release/2.0'), true],
    ["${{ event.payload.branch == 'main' || startsWith(event.payload.ref, 'refs/heads/release/') }}", push('feat/y'), false],
    ["steps.lint.status == 'failed' && !inputs.dry_run", push('main'), true],
    ["steps.build.status == 'succeeded' && exists(steps.build.result.build_id)", push('main'), true],
    ['steps.tests.result.failed == 0 && len(inputs.services) > 0', push('main'), true],
    ["contains(inputs.services, 'api') && !contains(inputs.services, 'worker')", push('main'), true],
    ["contains(event.payload.head_commit.message, '[deploy]') && !contains(event.payload.head_commit.message, '[skip ci]')", push('main'), true],
    ["event.payload.action == 'opened' || event.payload.action == 'synchronize'", pr('synchronize', []), true],
    ["event.payload.pull_request.base.ref == 'main' && !startsWith(event.payload.pull_request.title, 'WIP')", pr('opened', []), true],
    ["endsWith(steps.build.result.tag, '-rc') || inputs.env != 'prod'", push('main'), false],
    ["event.type == 'cron.tick' || inputs.force == true", push('main'), false],
    ["steps.deploy.status == 'skipped'", push('main', { steps: { deploy: { status: 'skipped' } } }), true],
    ['!exists(inputs.tag) || inputs.tag == steps.build.result.tag', push('main'), true],
  ];
  for (const [text, context, want] of table) {
    t.is(checkCondition(text), null, text);
    t.is(evaluateCondition(parseCondition(text), context), want, text);
  }
});

test('a parsed condition is reusable and evaluation does not change the context', (t) => {
  const cond = parseCondition("inputs.n > 1 && contains(inputs.list, 'a')");
  const context = { inputs: { n: 2, list: ['a'] } };
  const before = JSON.stringify(context);
  t.true(evaluateCondition(cond, context));
  t.false(evaluateCondition(cond, { inputs: { n: 0, list: ['a'] } }));
  t.true(evaluateCondition(cond, context));
  t.is(JSON.stringify(context), before);
  t.is(cond.source, "inputs.n > 1 && contains(inputs.list, 'a')");
});
