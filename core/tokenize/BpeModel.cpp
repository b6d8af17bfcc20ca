#include "tokenize/BpeModel.h"

#include "util/Error.h"

#include <cstdio>
#include <queue>

namespace qs {

namespace {

constexpr size_t kMaxCachedWordBytes = 128;
constexpr size_t kMaxCacheEntries = 200000;

size_t utf8Length(unsigned char lead) {
    if (lead < 0x80)
        return 1;
    if ((lead >> 5) == 0x6)
        return 2;
    if ((lead >> 4) == 0xE)
        return 3;
    if ((lead >> 3) == 0x1E)
        return 4;
    return 1; // a stray continuation or invalid byte stands alone
}

} // namespace

BpeModel::BpeModel(std::unordered_map<std::string, int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, Options options,
                   const std::string& source)
    : m_vocab(std::move(vocab)), m_options(std::move(options)) {
    int32_t maxId = -1;
    for (const auto& [token, id] : m_vocab) {
        if (id < 0)
            throw Error(source, "model.vocab", "negative id for token '" + token + "'");
        maxId = std::max(maxId, id);
    }
    m_idToToken.resize(static_cast<size_t>(maxId + 1));
    m_hasToken.assign(static_cast<size_t>(maxId + 1), false);
    for (const auto& [token, id] : m_vocab) {
        m_idToToken[static_cast<size_t>(id)] = token;
        m_hasToken[static_cast<size_t>(id)] = true;
    }

    m_merges.reserve(merges.size() * 2);
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [a, b] = merges[rank];
        const int32_t idA = tokenToId(a);
        const int32_t idB = tokenToId(b);
        const int32_t idMerged = tokenToId(a + b);
        const std::string field = "model.merges[" + std::to_string(rank) + "]";
        if (idA < 0 || idB < 0)
            throw Error(source, field, "merge '" + a + " " + b + "' uses a token not in the vocab");
        if (idMerged < 0)
            throw Error(source, field, "merged token '" + a + b + "' is not in the vocab");
        // The first (lowest) rank of a duplicated pair wins, as in Hugging Face.
        m_merges.emplace(pairKey(idA, idB), Merge{static_cast<int32_t>(rank), idMerged});
    }

    if (!m_options.unkToken.empty()) {
        m_unkId = tokenToId(m_options.unkToken);
        if (m_unkId < 0)
            throw Error(source, "model.unk_token",
                        "'" + m_options.unkToken + "' is not in the vocab");
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        m_byteIds[b] = m_options.byteFallback ? tokenToId(name) : -1;
    }
    for (int c = 0; c < 128; ++c)
        m_asciiCharIds[c] = tokenToId(std::string(1, static_cast<char>(c)));
}

int32_t BpeModel::tokenToId(const std::string& token) const {
    const auto it = m_vocab.find(token);
    return it == m_vocab.end() ? -1 : it->second;
}

const std::string* BpeModel::idToToken(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= m_idToToken.size() ||
        !m_hasToken[static_cast<size_t>(id)])
        return nullptr;
    return &m_idToToken[static_cast<size_t>(id)];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
    if (word.empty())
        return;
    if (word.size() > kMaxCachedWordBytes) {
        mergeWord(word, out);
        return;
    }
    std::string key(word);
    {
        std::lock_guard<std::mutex> lock(m_cacheMutex);
        const auto it = m_cache.find(key);
        if (it != m_cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int32_t> ids;
    mergeWord(word, ids);
    out.insert(out.end(), ids.begin(), ids.end());
    std::lock_guard<std::mutex> lock(m_cacheMutex);
    if (m_cache.size() >= kMaxCacheEntries)
        m_cache.clear();
    m_cache.emplace(std::move(key), std::move(ids));
}

// One symbol per character: its vocabulary id, else its UTF-8 bytes as <0xNN> tokens (byte
// fallback), else unk (consecutive unknowns fused into one when fuse_unk is set).
void BpeModel::initialSymbols(std::string_view word, std::vector<int32_t>& ids) const {
    bool pendingUnk = false;
    std::string ch;
    size_t i = 0;
    while (i < word.size()) {
        const auto lead = static_cast<unsigned char>(word[i]);
        const size_t len = std::min(utf8Length(lead), word.size() - i);
        int32_t id = -1;
        if (lead < 0x80) {
            id = m_asciiCharIds[lead];
        } else {
            ch.assign(word.data() + i, len);
            id = tokenToId(ch);
        }
        if (id >= 0) {
            if (pendingUnk)
                ids.push_back(m_unkId);
            pendingUnk = false;
            ids.push_back(id);
            i += len;
            continue;
        }
        bool allBytes = m_options.byteFallback;
        for (size_t k = 0; allBytes && k < len; ++k)
            allBytes = m_byteIds[static_cast<unsigned char>(word[i + k])] >= 0;
        if (allBytes) {
            if (pendingUnk)
                ids.push_back(m_unkId);
            pendingUnk = false;
            for (size_t k = 0; k < len; ++k)
                ids.push_back(m_byteIds[static_cast<unsigned char>(word[i + k])]);
        } else if (m_unkId >= 0) {
            if (pendingUnk && !m_options.fuseUnk)
                ids.push_back(m_unkId);
            pendingUnk = true;
        }
        // Without unk token and without fallback the character is dropped, as in Hugging Face.
        i += len;
    }
    if (pendingUnk)
        ids.push_back(m_unkId);
}

// Hugging Face's Word::merge_all: repeatedly apply the lowest-ranked merge present (leftmost on
// ties) using a heap of candidate pairs over a linked list of symbols, O(n log n) in the word
// length so that a whole text without pre-tokenizer (sentencepiece-style BPE) stays fast.
void BpeModel::mergeWord(std::string_view word, std::vector<int32_t>& out) const {
    if (m_options.ignoreMerges) {
        const int32_t whole = tokenToId(std::string(word));
        if (whole >= 0) {
            out.push_back(whole);
            return;
        }
    }
    std::vector<int32_t> ids;
    ids.reserve(word.size());
    initialSymbols(word, ids);
    const int32_t n = static_cast<int32_t>(ids.size());
    if (n <= 1 || m_merges.empty()) {
        out.insert(out.end(), ids.begin(), ids.end());
        return;
    }
    std::vector<int32_t> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
    std::vector<bool> alive(static_cast<size_t>(n), true);
    for (int32_t i = 0; i < n; ++i) {
        prev[static_cast<size_t>(i)] = i - 1;
        next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
    }

    struct Candidate {
        int32_t rank;
        int32_t pos;
        int32_t newId;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : pos > o.pos;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
    auto pushPair = [&](int32_t pos) {
        const int32_t nx = next[static_cast<size_t>(pos)];
        if (nx < 0)
            return;
        const auto it =
            m_merges.find(pairKey(ids[static_cast<size_t>(pos)], ids[static_cast<size_t>(nx)]));
        if (it != m_merges.end())
            queue.push({it->second.rank, pos, it->second.newId});
    };
    for (int32_t i = 0; i + 1 < n; ++i)
        pushPair(i);

    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        const auto p = static_cast<size_t>(top.pos);
        if (!alive[p] || next[p] < 0)
            continue;
        const auto right = static_cast<size_t>(next[p]);
        // Skip stale entries: the pair at this position changed since it was queued.
        const auto it = m_merges.find(pairKey(ids[p], ids[right]));
        if (it == m_merges.end() || it->second.newId != top.newId)
            continue;
        ids[p] = top.newId;
        alive[right] = false;
        next[p] = next[right];
        if (next[p] >= 0)
            prev[static_cast<size_t>(next[p])] = top.pos;
        if (prev[p] >= 0)
            pushPair(prev[p]);
        pushPair(top.pos);
    }
    for (int32_t i = 0; i >= 0; i = next[static_cast<size_t>(i)])
        out.push_back(ids[static_cast<size_t>(i)]);
}

} // namespace qs
