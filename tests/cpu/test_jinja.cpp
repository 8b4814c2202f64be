// The Jinja interpreter (forgia/jinja.h): every statement, filter, test, method and loop
// variable chat templates use, against the output jinja2 3.1 gives for the same template and
// context (set up as Hugging Face does: tests/data/chat/jinja_cases.py); errors with their
// line:column; the sandbox's bounds; malformed templates failing cleanly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "forgia/jinja.h"
#include "testutil.h"

namespace {

struct Case {
  const char *name, *tmpl, *want; // want nullptr: jinja2 raises
};

// Expected outputs: jinja2's, for this context, pinned time 1764633600 in UTC.
const char *const kCtx = "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Hello\"}], \"d\": {\"b\": 1, \"a\": [1, 2], \"items\": 3}, \"n\": null, \"s\": \"  Mixed Case  \", \"xs\": [3, 1, 2], \"f\": 1.5, \"t\": true}";
const Case kCases[] = {
    {"if", "{% if t %}A{% elif n %}B{% else %}C{% endif %}{% if n %}x{% elif xs %}y{% endif %}", "Ay"},
    {"for", "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", "1032TrueFalse3|2121FalseFalse3|3210FalseTrue3|"},
    {"for_prev_next", "{% for x in xs %}[{{ loop.previtem }},{{ loop.nextitem }}]{{ loop.cycle('a','b') }}{% endfor %}", "[,1]a[3,2]b[1,]a"},
    {"for_else_filter", "{% for x in [] %}x{% else %}empty{% endfor %}{% for x in xs if x > 1 %}{{ x }}/{{ loop.length }}{% endfor %}", "empty3/22/2"},
    {"for_unpack_dict", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", "b=1;a=[1, 2];items=3;baitems"},
    {"break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", "0134"},
    {"set_scope", "{% set x = 1 %}{% for i in xs %}{% set x = i %}{% endfor %}{{ x }}{% set ns = namespace(x=1) %}{% for i in xs %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}", "17"},
    {"set_block", "{% set b %}  inner {{ 1 + 1 }} {% endset %}[{{ b }}]{% set c | upper %}up{% endset %}{{ c }}", "[  inner 2 ]UP"},
    {"set_tuple", "{% set a, b = 1, 'two' %}{{ a }}{{ b }}{% set t = (1,) %}{{ t }}", "1two(1,)"},
    {"macro", "{% macro m(a, b=2, c='x') %}{{ a }}-{{ b }}-{{ c }}-{{ varargs }}-{{ kwargs }}{% endmacro %}{{ m(1) }}|{{ m(1, 3, c='y') }}|{{ m(1, 2, 3, 4, z=5) }}", "1-2-x-()-{}|1-3-y-()-{}|1-2-3-(4,)-{'z': 5}"},
    {"call", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 }}{% endcall %}{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1,2]) %}({{ v }}){% endcall %}", "<b>bold 1</b>(1)(2)"},
    {"filter_block", "{% filter upper %}abc {{ 'd' }}{% endfilter %}{% filter replace('a', 'o') | title %}banana split{% endfilter %}", "ABC DBonono Split"},
    {"raw", "{% raw %}{{ not }}{% if %}{% endraw %}", "{{ not }}{% if %}"},
    {"comment_ws", "a\n  {# note #}\nb {#- trim -#}   c", "a\nbc"},
    {"ws_control", "  x\n{%- if true %} y {% endif -%}  \n z {{- ' w ' -}} v", "  x y z w v"},
    {"trim_lstrip", "<\n    {% if true %}\n    in\n    {% endif %}\n>", "<\n    in\n>"},
    {"plus_keeps", "a\n  {%+ if true %}b{% endif +%}\nc", "a\n  b\nc"},
    {"print_values", "{{ none }} {{ true }} {{ false }} {{ 1.0 }} {{ 1e20 }} {{ 1.5e-5 }} {{ 0.1 + 0.2 }} {{ [1, 'a', none, {'k': \"it's\"}] }} {{ (1, 2) }} {{ (1,) }}", "None True False 1.0 1e+20 1.5e-05 0.30000000000000004 [1, 'a', None, {'k': \"it's\"}] (1, 2) (1,)"},
    {"arith", "{{ 7 // -2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 3 / 1 }} {{ 7 % 2.5 }} {{ 'ab' * 2 }} {{ [1] * 2 }} {{ 1 + 2.0 }} {{ -f }} {{ 'a' ~ 1.0 ~ none }}", "-4 2 1024 0.5 3.0 2.0 abab [1, 1] 3.0 -1.5 a1.0None"},
    {"compare", "{{ 1 == 1.0 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'A' < 'a' }} {{ [1, 2] < [1, 3] }} {{ 1 in xs }} {{ 'a' not in 'bc' }} {{ 'b' in d }} {{ true == 1 }}", "True True False True True True True True True"},
    {"logic", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ none and 1 }} {{ not xs }} {{ 1 if n else 2 }} [{{ 1 if n }}]", "x b None False 2 []"},
    {"subscript", "{{ messages[0].role }} {{ messages[-1]['content'] }} {{ d.a[1] }} {{ 'abc'[::-1] }} {{ 'abcdef'[1:-1:2] }} {{ xs[5:] }} {{ xs[-2:] }} [{{ xs[9] }}] {{ 'héllo'[1] }}", "system Hello 2 cba bd [] [1, 2] [] é"},
    {"undefined", "[{{ nope }}] [{{ d.nope }}] {{ nope is defined }} {{ nope | length }} {{ nope | default('dflt') }} {{ '' | default('e', true) }} {{ d.b | default(9) }}", "[] [] False 0 dflt e 1"},
    {"tests", "{{ n is none }} {{ 1 is number }} {{ t is number }} {{ t is integer }} {{ f is float }} {{ 's' is string }} {{ d is mapping }} {{ xs is iterable }} {{ 's' is sequence }} {{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 2 is equalto 2 }} {{ 2 is eq 3 }} {{ 2 is ne 3 }} {{ 1 is lt 2 }} {{ 2 is gt 1 }} {{ t is true }} {{ 1 is true }} {{ false is false }} {{ t is boolean }} {{ n is sameas none }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ 1 is in xs }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ nope is undefined }} {{ x is not defined }}", "True True True False True True True True True True True True True False True True True True False True True True True True True True True True True"},
    {"filters_str", "{{ s | trim }}|{{ s | upper }}|{{ s | lower }}|{{ 'hello world-foo' | title }}|{{ 'hELLO wORLD' | capitalize }}|{{ 'x' | center(5) }}|{{ 'a<b>&\"' | e }}|{{ 'ab' | reverse }}|{{ 'aXbX' | replace('X', '-') }}|{{ 'aXbX' | replace('X', '-', 1) }}|{{ 'a b  c' | wordcount }}", "Mixed Case|  MIXED CASE  |  mixed case  |Hello World-Foo|Hello world|  x  |a&lt;b&gt;&amp;&#34;|ba|a-b-|a-bX|3"},
    {"filters_num", "{{ -3 | abs }} {{ '42' | int }} {{ '3.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ 3 | round }} {{ 1 | string }}{{ none | string }}", "3 42 3 0 7 3 2.5 2.0 4.0 2.67 3.0 3 1None"},
    {"filters_list", "{{ xs | length }} {{ xs | count }} {{ xs | first }} {{ xs | last }} {{ xs | sort }} {{ xs | sort(reverse=true) }} {{ xs | join(', ') }} {{ xs | list }} {{ 'ab' | list }} {{ xs | reverse | list }} {{ [1, 1, 2] | unique | list }} {{ ['b', 'A', 'a'] | unique | list }} {{ xs | max }} {{ xs | min }} {{ xs | sum }} {{ [1, 2, 3, 4, 5] | batch(2) | list }}", "3 3 3 2 [1, 2, 3] [3, 2, 1] 3, 1, 2 [3, 1, 2] ['a', 'b'] [2, 1, 3] [1, 2] ['b', 'A'] 3 1 6 [[1, 2], [3, 4], [5]]"},
    {"filters_map_select", "{{ messages | map(attribute='role') | list }} {{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join }} {{ messages | rejectattr('role', 'eq', 'system') | list | length }} {{ xs | select('odd') | list }} {{ xs | reject('odd') | list }} {{ ['a', 'b'] | map('upper') | list }} {{ messages | map(attribute='nope', default='-') | join }} {{ n | selectattr('x') | list }}", "['system', 'user', 'assistant'] Hi 2 [3, 1] [2] ['A', 'B'] --- []"},
    {"filters_dict", "{{ d | dictsort }} {{ d | items | list }} {{ {'b': 1, 'A': 2} | dictsort }} {{ {'x': 2, 'y': 1} | dictsort(by='value') }}", "[('a', [1, 2]), ('b', 1), ('items', 3)] [('b', 1), ('a', [1, 2]), ('items', 3)] [('A', 2), ('b', 1)] [('y', 1), ('x', 2)]"},
    {"indent", "{{ 'a\nb\n' | indent(2) }}|{{ 'a\n\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent('> ', blank=true) }}", "a\n  b\n|  a\n\n  b|a\n> \n> b"},
    {"tojson", "{{ messages[1] | tojson }} {{ d | tojson(indent=2) }} {{ 'é\n\"' | tojson }} {{ 'é' | tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': none} | tojson(sort_keys=true) }} {{ [1, 1.5, true] | tojson(separators=(',', ':')) }}", "{\"role\": \"user\", \"content\": \"Hi\"} {\n  \"b\": 1,\n  \"a\": [\n    1,\n    2\n  ],\n  \"items\": 3\n} \"é\\n\\\"\" \"\\u00e9\" {\"a\": null, \"b\": 1} [1,1.5,true]"},
    {"format", "{{ '%s-%d' | format('a', 3) }} {{ '%s and %s' % ('x', 'y') }} {{ '{} {name}'.format(1, name='n') }} {{ '%05.1f' | format(3.14159) }}", "a-3 x and y 1 n 003.1"},
    {"markup", "{{ '<'|safe + '<' }} {{ '<' + '<'|safe }} {{ '<'|safe ~ '<' }} {{ ('<'|safe|trim) + '&' }}", "<&lt; &lt;< << <&amp;"},
    {"str_methods", "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a b  c'.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a  b'.split(' ') }}|{{ 'foo'.startswith(('a', 'f')) }}|{{ 'foo'.endswith('o') }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'hi'.upper() }}{{ 'HI'.lower() }}{{ 'a-b c'.title() }}{{ 'aB'.capitalize() }}|{{ 'abcb'.find('b') }}{{ 'abcb'.rfind('b') }}{{ 'abcb'.count('b') }}|{{ '-'.join(['a', 'b']) }}|{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}{{ ' '.isspace() }}", "Mixed Case|Mixed Case  |  Mixed Case|a|['a', 'b', 'c']|['a', 'b,c']|['a', '', 'b']|True|True|bba|HIhiA-B CAb|132|a-b|TrueTrueTrue"},
    {"dict_methods", "{{ d.get('b') }} {{ d.get('z', 'dz') }} {{ d.get('z') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d['items'] }} {{ messages[0].get('role') }}", "1 dz None ['b', 'a', 'items'] [1, [1, 2], 3] 3 system"},
    {"strftime", "{{ strftime_now('%Y-%m-%d %H:%M %b %A') }}", "2025-12-02 00:00 Dec Tuesday"},
    {"unicode_ws", "[{{ '　x '.strip() }}] [{{ '​x'.strip() }}]", "[x] [​x]"},
    {"unknown_filter_unreached", "{% if false %}{{ 1 | nosuchfilter }}{% endif %}ok", "ok"},
    {"raise", "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}", nullptr},
    {"undef_attr", "{{ nope.attr }}", nullptr},
    {"div0", "{{ 1 / 0 }}", nullptr},
    {"type", "{{ 'a' + 1 }}", nullptr},
    {"order", "{{ 1 < 'a' }}", nullptr},
    {"append", "{% set l = [] %}{% set _ = l.append(1) %}", nullptr},
    {"update", "{% set _ = d.update({'x': 1}) %}", nullptr},
    {"unknown_filter_reached", "{{ 1 | nosuchfilter }}", nullptr},
    {"tojson_undef", "{{ nope | tojson }}", nullptr},
    {"unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", nullptr},
};

struct Result {
  fg_status st;
  std::string text, err;
};

Result render(const std::string &tmpl, const std::string &ctx = kCtx, const fg_jinja_opts *o = nullptr) {
  Result r{FG_OK, "", ""};
  fg_jinja *j = nullptr;
  r.st = fg_jinja_compile(tmpl.data(), tmpl.size(), &j);
  if (r.st) {
    r.err = fg_last_error();
    return r;
  }
  fg_jinja_opts def = {};
  def.now = 1764633600;
  char *out = nullptr;
  size_t n = 0;
  r.st = fg_jinja_render(j, ctx.data(), ctx.size(), o ? o : &def, &out, &n);
  if (r.st) r.err = fg_last_error();
  else r.text.assign(out, n);
  fg_jinja_free_text(out);
  fg_jinja_free(j);
  return r;
}

class JinjaEnv : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};
[[maybe_unused]] const auto *const kEnv = ::testing::AddGlobalTestEnvironment(new JinjaEnv);

} // namespace

TEST(Jinja, EveryCaseRendersAsJinja2) {
  for (const Case &c : kCases) {
    Result r = render(c.tmpl);
    if (c.want) {
      EXPECT_EQ(r.st, FG_OK) << c.name << ": " << r.err;
      EXPECT_EQ(r.text, c.want) << c.name;
    } else {
      EXPECT_NE(r.st, FG_OK) << c.name << " rendered " << r.text;
      EXPECT_FALSE(r.err.empty()) << c.name;
    }
  }
}

TEST(Jinja, RaiseExceptionFailsWithItsMessage) {
  Result r = render("{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}");
  EXPECT_EQ(r.st, FG_ERR_INVALID_ARG);
  EXPECT_EQ(r.err, "Conversation roles must alternate user/assistant/user/assistant/...");
}

TEST(Jinja, ErrorsNameLineAndColumn) {
  Result r = render("line one\n{% if %}");
  EXPECT_EQ(r.st, FG_ERR_INVALID_ARG);
  EXPECT_NE(r.err.find("line 2:7"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected an expression"), std::string::npos) << r.err;
  r = render("{% for x in xs %}\n  {{ x }}\n");
  EXPECT_NE(r.err.find("endfor"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 1:1"), std::string::npos) << r.err;
  r = render("{{ 'abc }}");
  EXPECT_NE(r.err.find("line 1:4: unterminated string"), std::string::npos) << r.err;
  r = render("{# never closed");
  EXPECT_NE(r.err.find("comment"), std::string::npos) << r.err;
  r = render("{% endif %}");
  EXPECT_NE(r.err.find("line 1:4: unexpected 'endif'"), std::string::npos) << r.err;
  r = render("{% frobnicate %}");
  EXPECT_NE(r.err.find("unknown tag 'frobnicate'"), std::string::npos) << r.err;
  r = render("a\nb {{ nope.attr }}");
  EXPECT_NE(r.err.find("line 2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'nope' is undefined"), std::string::npos) << r.err;
  r = render("{% break %}");
  EXPECT_NE(r.err.find("break outside a loop"), std::string::npos) << r.err;
  r = render("{{ 1 }}", "[1, 2]");
  EXPECT_EQ(r.st, FG_ERR_INVALID_JSON);
  r = render("{{ 1 }}", "{\"a\": ");
  EXPECT_EQ(r.st, FG_ERR_INVALID_JSON);
}

TEST(Jinja, OutputIsBounded) {
  fg_jinja_opts o = {};
  o.max_output = 1000;
  Result r = render("{% for i in range(100) %}0123456789{% endfor %}", "{}", &o);
  EXPECT_EQ(r.st, FG_OK) << r.err;
  EXPECT_EQ(r.text.size(), 1000u);
  r = render("{% for i in range(101) %}0123456789{% endfor %}", "{}", &o);
  EXPECT_EQ(r.st, FG_ERR_RANGE);
  EXPECT_NE(r.err.find("1000 bytes"), std::string::npos) << r.err;
  r = render("{{ 'x' * 5000 }}", "{}", &o);
  EXPECT_EQ(r.st, FG_ERR_RANGE) << r.err;
}

TEST(Jinja, LoopsAndStepsAreBounded) {
  fg_jinja_opts o = {};
  o.max_steps = 10000;
  Result r = render("{% for i in range(1000000) %}{% endfor %}", "{}", &o);
  EXPECT_EQ(r.st, FG_ERR_RANGE);
  EXPECT_NE(r.err.find("10000 steps"), std::string::npos) << r.err;
  // Nested loops multiply: stopped by the same bound, not by the time they would take.
  r = render("{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}"
             "{% endfor %}");
  EXPECT_EQ(r.st, FG_ERR_RANGE);
}

TEST(Jinja, RecursionIsBounded) {
  Result r = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(r.st, FG_ERR_RANGE);
  EXPECT_NE(r.err.find("nesting"), std::string::npos) << r.err;
  fg_jinja_opts o = {};
  o.max_depth = 50;
  r = render("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% else %}done{% endif %}{% endmacro %}{{ f(3) }}", "{}", &o);
  EXPECT_EQ(r.st, FG_OK) << r.err;
  EXPECT_EQ(r.text, "done");
  r = render("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% else %}done{% endif %}{% endmacro %}{{ f(100) }}", "{}", &o);
  EXPECT_EQ(r.st, FG_ERR_RANGE);
  // Deep expression nesting is a syntax error, not a stack overflow.
  r = render("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}");
  EXPECT_NE(r.st, FG_OK);
  r = render("{{ " + std::string(100000, '-') + "1 }}");
  EXPECT_NE(r.st, FG_OK);
  std::string sum = "{{ 1";
  for (int i = 0; i < 100000; i++) sum += " + 1";
  r = render(sum + " }}");
  EXPECT_NE(r.st, FG_OK);
}

TEST(Jinja, MemoryIsBounded) {
  fg_jinja_opts o = {};
  o.max_memory = 1 << 20;
  Result r = render("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
                    "{}", &o);
  EXPECT_EQ(r.st, FG_ERR_RANGE) << r.err;
  EXPECT_NE(r.err.find("memory"), std::string::npos) << r.err;
}

TEST(Jinja, StringAccumulationStaysLinear) {
  // ns.s = ns.s ~ x grows in place, so 100000 appends do not copy 100000 times.
  Result r = render("{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'ab' %}{% endfor %}"
                    "{{ ns.s | length }}");
  EXPECT_EQ(r.st, FG_OK) << r.err;
  EXPECT_EQ(r.text, "200000");
}

TEST(Jinja, TrailingNewlineAndNewlinesAreJinja2s) {
  EXPECT_EQ(render("a\r\nb\rc\n").text, "a\nb\nc");
  EXPECT_EQ(render("a\n\n").text, "a\n");
  EXPECT_EQ(render("").text, "");
}

TEST(Jinja, MalformedTemplatesFailCleanly) {
  // Every prefix of a real template, and bytes flipped through it: compile and render end
  // with FG_OK or an error message, never a crash (ASan builds check the memory).
  std::vector<uint8_t> bytes = fgt::read_file(std::string(FORGIA_TEST_DATA) + "/chat/templates/qwen3-0.6b.jinja");
  std::string t(bytes.begin(), bytes.end());
  ASSERT_GT(t.size(), 100u);
  fg_jinja_opts o = {};
  o.max_steps = 100000;
  for (size_t n = 0; n < t.size(); n += 7) {
    Result r = render(t.substr(0, n), kCtx, &o);
    EXPECT_TRUE(r.st == FG_OK || !r.err.empty()) << n;
  }
  const char flips[] = {'{', '}', '%', '#', '-', '\'', '"', '(', ')', '|', '.', '\0', '\n'};
  for (size_t i = 0; i < t.size(); i += 13) {
    std::string m = t;
    m[i] = flips[i % sizeof flips];
    Result r = render(m, kCtx, &o);
    EXPECT_TRUE(r.st == FG_OK || !r.err.empty()) << i;
  }
}

TEST(Jinja, NullArguments) {
  fg_jinja *j = nullptr;
  EXPECT_EQ(fg_jinja_compile(nullptr, 3, &j), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_jinja_compile("x", 1, nullptr), FG_ERR_INVALID_ARG);
  ASSERT_EQ(fg_jinja_compile("x", 1, &j), FG_OK);
  char *out = nullptr;
  EXPECT_EQ(fg_jinja_render(j, nullptr, 0, nullptr, nullptr, nullptr), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_jinja_render(j, nullptr, 0, nullptr, &out, nullptr), FG_OK);
  EXPECT_STREQ(out, "x");
  fg_jinja_free_text(out);
  fg_jinja_free(j);
  fg_jinja_free(nullptr);
}

TEST(Jinja, HugeCountsOnEmptyOrShortSequencesEndAtOnce) {
  EXPECT_EQ(render("[{{ '' * 9223372036854775807 }}]{{ [] * 9223372036854775807 }}").text, "[][]");
  EXPECT_EQ(render("{{ 'abc'[1::9223372036854775807] }}{{ 'abc'[::-9223372036854775807] }}{{ [1, 2][::-9223372036854775807] }}")
                .text,
            "bc[2]");
}
