// A translation unit that keeps g++ busy for a second or two: the standard library's
// containers, algorithms and regex instantiated over a few types.
#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

template <typename K, typename V>
std::vector<std::pair<K, V>> sorted_items(const std::unordered_map<K, V> &m) {
        std::vector<std::pair<K, V>> v(m.begin(), m.end());
        std::sort(v.begin(), v.end());
        return v;
}

std::map<std::string, int> count_words(const std::string &text) {
        std::map<std::string, int> counts;
        std::regex word("[A-Za-z]+");
        for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator(); ++it)
                counts[it->str()]++;
        return counts;
}

std::string report(const std::string &text) {
        std::unordered_map<std::string, long> a;
        std::unordered_map<long, double> b;
        std::unordered_map<int, std::string> c;
        for (const auto &[w, n] : count_words(text)) {
                a[w] = n;
                b[n] += 1.0 / n;
                c[(int) w.size()] += w;
        }
        std::ostringstream out;
        for (const auto &[k, v] : sorted_items(a))
                out << k << ' ' << v << '\n';
        for (const auto &[k, v] : sorted_items(b))
                out << k << ' ' << v << '\n';
        for (const auto &[k, v] : sorted_items(c))
                out << k << ' ' << v << '\n';
        return out.str();
}
