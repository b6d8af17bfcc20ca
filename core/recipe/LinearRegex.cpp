#include "recipe/LinearRegex.h"

#include <bitset>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace qs {

namespace {

// Why not std::regex: libstdc++'s engine backtracks (exponential time on "re:(a+)+$" against a
// long name) and recurses once per character (a long name overflows the stack), and a recipe is
// a file users receive from others. Layer patterns only ever need a yes/no full match, so the
// language of the expression is all that matters (no captures, no match priority): a Thompson NFA
// simulated over a set of states answers that in O(len(name) × states), with no recursion at
// match time. The ECMAScript subset recipes use is accepted (literals, ".", escapes, classes,
// groups, alternation, greedy or lazy quantifiers, ^ $ \b \B); features whose matching cannot be
// done this way (backreferences, lookaround) are refused by name, as is anything unusual enough
// that it is more likely a mistake (POSIX [[:classes:]], \u escapes beyond one byte). Sizes are
// bounded so a pattern cannot make the automaton large: see the limits below.

// Limits, each named in the error that enforces it (kMaxPatternLength: LinearRegex.h).
constexpr int kMaxRegexNesting = 64;      // nested groups
constexpr int kMaxRepeatCount = 1000;     // the numbers in {m,n}
constexpr size_t kMaxRegexStates = 10000; // NFA states after expanding counted repetitions

using ByteSet = std::bitset<256>;

struct RegexNode {
    enum Kind { Empty, Set, Concat, Alt, Repeat, Assert } kind = Empty;
    ByteSet set;
    std::vector<RegexNode> children;
    int min = 0, max = 0; // Repeat; max < 0: unbounded
    char assertion = 0;   // Assert: '^', '$', 'b' (word boundary), 'B' (not one)
};

// ASCII only, whatever the process locale (Qt applications switch to the user's): matching is
// bytewise, as std::regex<char> in the "C" locale.
bool isWordByte(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

ByteSet classSet(char c) {
    ByteSet s;
    for (int b = 0; b < 256; ++b) {
        const auto u = static_cast<unsigned char>(b);
        switch (c) {
        case 'd':
        case 'D':
            s[b] = u >= '0' && u <= '9';
            break;
        case 'w':
        case 'W':
            s[b] = isWordByte(u);
            break;
        case 's':
        case 'S':
            s[b] = u == ' ' || (u >= '\t' && u <= '\r');
            break;
        }
    }
    return std::isupper(static_cast<unsigned char>(c)) ? ~s : s;
}

class RegexParser {
public:
    explicit RegexParser(const std::string& text) : m_text(text) {}

    RegexNode parse() {
        RegexNode node = parseAlternation(0);
        if (m_pos < m_text.size()) // only an unmatched ')' stops the top level early
            fail("unmatched ')'");
        return node;
    }

private:
    [[noreturn]] void fail(const std::string& why) const {
        throw RegexSyntaxError(why + " at offset " + std::to_string(m_pos));
    }
    bool atEnd() const { return m_pos >= m_text.size(); }
    char peek() const { return m_text[m_pos]; }

    RegexNode parseAlternation(int depth) {
        if (depth > kMaxRegexNesting)
            fail("groups nested deeper than " + std::to_string(kMaxRegexNesting));
        RegexNode alt;
        alt.kind = RegexNode::Alt;
        alt.children.push_back(parseSequence(depth));
        while (!atEnd() && peek() == '|') {
            ++m_pos;
            alt.children.push_back(parseSequence(depth));
        }
        return alt.children.size() == 1 ? std::move(alt.children.front()) : alt;
    }

    RegexNode parseSequence(int depth) {
        RegexNode seq;
        seq.kind = RegexNode::Concat;
        while (!atEnd() && peek() != '|' && peek() != ')') {
            RegexNode atom = parseAtom(depth);
            parseQuantifiers(atom);
            seq.children.push_back(std::move(atom));
        }
        return seq;
    }

    // At most one quantifier per atom: stacked ones ("a**", which libstdc++ accepts) would nest
    // repeat nodes as deep as the pattern is long; "(a*)*" says the same thing.
    void parseQuantifiers(RegexNode& atom) {
        for (int count = 0; !atEnd(); ++count) {
            int min = 0, max = -1;
            const char c = peek();
            if (c == '*') {
                ++m_pos;
            } else if (c == '+') {
                min = 1;
                ++m_pos;
            } else if (c == '?') {
                max = 1;
                ++m_pos;
            } else if (c == '{') {
                parseBraces(min, max);
            } else {
                return;
            }
            if (count > 0 || atom.kind == RegexNode::Assert) {
                --m_pos;
                fail("nothing to repeat");
            }
            // A lazy quantifier accepts the same names as the greedy one in a full match.
            if (!atEnd() && peek() == '?')
                ++m_pos;
            RegexNode rep;
            rep.kind = RegexNode::Repeat;
            rep.min = min;
            rep.max = max;
            rep.children.push_back(std::move(atom));
            atom = std::move(rep);
        }
    }

    int parseCount() {
        const size_t start = m_pos;
        long value = 0;
        while (!atEnd() && std::isdigit(static_cast<unsigned char>(peek()))) {
            value = std::min<long>(value * 10 + (peek() - '0'), long(kMaxRepeatCount) + 1);
            ++m_pos;
        }
        if (m_pos == start)
            fail("expected a number in {m,n}");
        if (value > kMaxRepeatCount)
            fail("repetition count over " + std::to_string(kMaxRepeatCount));
        return int(value);
    }

    void parseBraces(int& min, int& max) {
        ++m_pos; // '{'
        min = parseCount();
        max = min;
        if (!atEnd() && peek() == ',') {
            ++m_pos;
            max = !atEnd() && peek() == '}' ? -1 : parseCount();
        }
        if (atEnd() || peek() != '}')
            fail("expected '}' closing {m,n}");
        ++m_pos;
        if (max >= 0 && max < min)
            fail("{m,n} with n < m");
    }

    RegexNode setNode(const ByteSet& s) {
        RegexNode n;
        n.kind = RegexNode::Set;
        n.set = s;
        return n;
    }

    RegexNode parseAtom(int depth) {
        const char c = m_text[m_pos++];
        switch (c) {
        case '(': {
            if (!atEnd() && peek() == '?') {
                if (m_pos + 1 < m_text.size() && m_text[m_pos + 1] == ':') {
                    m_pos += 2;
                } else {
                    const char kind = m_pos + 1 < m_text.size() ? m_text[m_pos + 1] : 0;
                    fail(kind == '=' || kind == '!' ? "lookahead (?= or (?! is not supported"
                         : kind == '<' ? "lookbehind and named groups are not supported"
                                       : "unsupported group '(?'");
                }
            }
            RegexNode inner = parseAlternation(depth + 1);
            if (atEnd() || peek() != ')')
                fail("missing ')'");
            ++m_pos;
            return inner;
        }
        case '[':
            return setNode(parseBracket());
        case '.': {
            ByteSet s;
            s.set();
            s['\n'] = false;
            s['\r'] = false;
            return setNode(s);
        }
        case '^':
        case '$': {
            RegexNode n;
            n.kind = RegexNode::Assert;
            n.assertion = c;
            return n;
        }
        case '\\': {
            if (!atEnd() && (peek() == 'b' || peek() == 'B')) {
                RegexNode n;
                n.kind = RegexNode::Assert;
                n.assertion = m_text[m_pos++];
                return n;
            }
            return setNode(parseEscape(false));
        }
        case '*':
        case '+':
        case '?':
            --m_pos;
            fail("nothing to repeat");
        case '{':
            --m_pos;
            fail("'{' without an atom to repeat");
        default: {
            ByteSet s;
            s[static_cast<unsigned char>(c)] = true;
            return setNode(s);
        }
        }
    }

    unsigned hexDigits(int count) {
        unsigned value = 0;
        for (int i = 0; i < count; ++i) {
            if (atEnd() || !std::isxdigit(static_cast<unsigned char>(peek())))
                fail("expected " + std::to_string(count) + " hex digits");
            const char h = peek();
            value =
                value * 16 + unsigned(std::isdigit(static_cast<unsigned char>(h))
                                          ? h - '0'
                                          : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
            ++m_pos;
        }
        return value;
    }

    // After a '\\': the set of bytes the escape stands for.
    ByteSet parseEscape(bool inBracket) {
        if (atEnd())
            fail("trailing '\\'");
        const char c = m_text[m_pos++];
        ByteSet s;
        auto one = [&s](unsigned value) {
            s[value & 0xFF] = true;
            return s;
        };
        switch (c) {
        case 'd':
        case 'D':
        case 'w':
        case 'W':
        case 's':
        case 'S':
            return classSet(c);
        case 'n':
            return one('\n');
        case 'r':
            return one('\r');
        case 't':
            return one('\t');
        case 'f':
            return one('\f');
        case 'v':
            return one('\v');
        case '0':
            return one(0);
        case 'b':
            if (inBracket)
                return one('\b');
            break;
        case 'x':
            return one(hexDigits(2));
        case 'u': {
            const unsigned value = hexDigits(4);
            if (value > 0x7F)
                fail("\\u escapes above 007F are not supported (layer names are matched bytewise)");
            return one(value);
        }
        default:
            break;
        }
        if (c >= '1' && c <= '9')
            fail(std::string("backreference \\") + c + " is not supported");
        if (c != '_' && isWordByte(static_cast<unsigned char>(c)))
            fail(std::string("unsupported escape \\") + c);
        return one(static_cast<unsigned char>(c)); // an escaped punctuation character is literal
    }

    // After a '[': "[abc]", "[^a-z]", escapes and class escapes inside.
    ByteSet parseBracket() {
        ByteSet s;
        bool negated = false;
        if (!atEnd() && peek() == '^') {
            negated = true;
            ++m_pos;
        }
        while (true) {
            if (atEnd())
                fail("missing ']'");
            if (peek() == ']') // "[]" is an empty class in ECMAScript: it matches nothing
                break;
            if (m_text.compare(m_pos, 2, "[:") == 0 || m_text.compare(m_pos, 2, "[=") == 0 ||
                m_text.compare(m_pos, 2, "[.") == 0)
                fail("POSIX bracket classes such as [[:alpha:]] are not supported");
            ByteSet lo;
            int loByte = -1; // the single byte of `lo`, -1 for a class escape
            if (peek() == '\\') {
                ++m_pos;
                lo = parseEscape(true);
                if (lo.count() == 1)
                    for (int b = 0; b < 256; ++b)
                        if (lo[b])
                            loByte = b;
            } else {
                loByte = static_cast<unsigned char>(m_text[m_pos++]);
                lo[loByte] = true;
            }
            if (m_pos + 1 < m_text.size() && peek() == '-' && m_text[m_pos + 1] != ']') {
                ++m_pos;
                int hiByte = -1;
                if (peek() == '\\') {
                    ++m_pos;
                    const ByteSet hi = parseEscape(true);
                    if (hi.count() == 1)
                        for (int b = 0; b < 256; ++b)
                            if (hi[b])
                                hiByte = b;
                } else {
                    hiByte = static_cast<unsigned char>(m_text[m_pos++]);
                }
                if (loByte < 0 || hiByte < 0)
                    fail("a class escape cannot bound a range");
                if (hiByte < loByte)
                    fail("range out of order in a character class");
                for (int b = loByte; b <= hiByte; ++b)
                    s[b] = true;
            } else {
                s |= lo;
            }
        }
        ++m_pos; // ']'
        return negated ? ~s : s;
    }

    const std::string& m_text;
    size_t m_pos = 0;
};

// A Thompson NFA: Set states consume one byte, Split and Assert states are epsilon moves.
class RegexProgram {
public:
    explicit RegexProgram(const std::string& expression) {
        if (expression.size() > kMaxPatternLength)
            throw RegexSyntaxError("longer than " + std::to_string(kMaxPatternLength) +
                                   " characters");
        const RegexNode root = RegexParser(expression).parse();
        m_states.push_back({State::Match, {}, -1, -1, 0});
        m_start = compile(root, 0);
    }

    bool fullMatch(const std::string& name) const {
        std::vector<int> current, next;
        std::vector<size_t> seen(m_states.size(), 0); // generation stamps: no clearing per step
        std::vector<int> stack;
        size_t generation = 1;
        addState(m_start, name, 0, current, seen, generation, stack);
        for (size_t pos = 0; pos < name.size() && !current.empty(); ++pos) {
            const auto byte = static_cast<unsigned char>(name[pos]);
            next.clear();
            ++generation;
            for (const int s : current) {
                const State& st = m_states[size_t(s)];
                if (st.kind == State::Set && st.set[byte])
                    addState(st.out, name, pos + 1, next, seen, generation, stack);
            }
            current.swap(next);
        }
        for (const int s : current)
            if (m_states[size_t(s)].kind == State::Match)
                return true;
        return false;
    }

private:
    struct State {
        enum Kind { Match, Set, Split, Assert } kind;
        ByteSet set;
        int out, out1;
        char assertion;
    };

    int add(State s) {
        if (m_states.size() >= kMaxRegexStates)
            throw RegexSyntaxError("too large: more than " + std::to_string(kMaxRegexStates) +
                                   " states after expanding repetitions");
        m_states.push_back(s);
        return int(m_states.size()) - 1;
    }

    // Compiles `node` so that matching it continues at state `next`; returns its entry state.
    // Recursion follows the parse tree, whose depth the parser bounds.
    int compile(const RegexNode& node, int next) {
        switch (node.kind) {
        case RegexNode::Empty:
            return next;
        case RegexNode::Set:
            return add({State::Set, node.set, next, -1, 0});
        case RegexNode::Assert:
            return add({State::Assert, {}, next, -1, node.assertion});
        case RegexNode::Concat:
            for (auto it = node.children.rbegin(); it != node.children.rend(); ++it)
                next = compile(*it, next);
            return next;
        case RegexNode::Alt: {
            int entry = compile(node.children.back(), next);
            for (size_t i = node.children.size() - 1; i-- > 0;)
                entry = add({State::Split, {}, compile(node.children[i], next), entry, 0});
            return entry;
        }
        case RegexNode::Repeat: {
            const RegexNode& body = node.children.front();
            int entry = next;
            if (node.max < 0) {
                // A loop: the split state enters the body (which returns to it) or leaves.
                const int loop = add({State::Split, {}, -1, next, 0});
                m_states[size_t(loop)].out = compile(body, loop);
                entry = loop;
            } else {
                // Optional copies, each one able to skip straight to `next`.
                for (int i = node.min; i < node.max; ++i)
                    entry = add({State::Split, {}, compile(body, entry), next, 0});
            }
            for (int i = 0; i < node.min; ++i)
                entry = compile(body, entry);
            return entry;
        }
        }
        return next;
    }

    bool assertionHolds(char assertion, const std::string& name, size_t pos) const {
        switch (assertion) {
        case '^':
            return pos == 0;
        case '$':
            return pos == name.size();
        default: {
            const bool before = pos > 0 && isWordByte(static_cast<unsigned char>(name[pos - 1]));
            const bool after =
                pos < name.size() && isWordByte(static_cast<unsigned char>(name[pos]));
            return (before != after) == (assertion == 'b');
        }
        }
    }

    // Adds `s` and every state reachable from it by epsilon moves at `pos` (explicit stack: the
    // automaton may be deep, the call stack must not grow with it).
    void addState(int s, const std::string& name, size_t pos, std::vector<int>& list,
                  std::vector<size_t>& seen, size_t generation, std::vector<int>& stack) const {
        stack.assign(1, s);
        while (!stack.empty()) {
            const int id = stack.back();
            stack.pop_back();
            if (seen[size_t(id)] == generation)
                continue;
            seen[size_t(id)] = generation;
            const State& st = m_states[size_t(id)];
            switch (st.kind) {
            case State::Split:
                stack.push_back(st.out1);
                stack.push_back(st.out);
                break;
            case State::Assert:
                if (assertionHolds(st.assertion, name, pos))
                    stack.push_back(st.out);
                break;
            case State::Match:
            case State::Set:
                list.push_back(id);
                break;
            }
        }
    }

    std::vector<State> m_states;
    int m_start = 0;
};

// Compiled programs, shared between threads: compiling costs far more than matching a short
// layer name, and recipes match every layer against every pattern. Programs are immutable.
std::shared_ptr<const RegexProgram> compiledRegex(const std::string& expression) {
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const RegexProgram>> cache;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = cache.find(expression);
        if (it != cache.end())
            return it->second;
    }
    auto compiled = std::make_shared<const RegexProgram>(expression);
    std::lock_guard<std::mutex> lock(mutex);
    if (cache.size() > 4096)
        cache.clear();
    cache.emplace(expression, compiled);
    return compiled;
}

} // namespace

bool regexFullMatch(const std::string& expression, const std::string& name) {
    return compiledRegex(expression)->fullMatch(name);
}

void checkRegex(const std::string& expression) {
    compiledRegex(expression);
}

} // namespace qs
