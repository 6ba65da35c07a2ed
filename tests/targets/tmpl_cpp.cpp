/* tmpl_cpp.cpp: a C++ target whose time goes to a method of a class
 * template with long template arguments, for the summary's short names:
 * Accumulator<std::vector<std::pair<int, long> > >::add(...) runs ROUNDS
 * times over a vector (about 0.3 s); prints "add calls N" and exits. */
#include <cstdio>
#include <utility>
#include <vector>

template <typename C> struct Accumulator {
	long total = 0;
	__attribute__((noinline)) void add(const C &items);
};

template <typename C> void Accumulator<C>::add(const C &items)
{
	for (const auto &item : items)
		total += item.first * item.second + (total >> 3);
}

int main()
{
	std::vector<std::pair<int, long>> items;
	Accumulator<std::vector<std::pair<int, long>>> acc;
	unsigned long calls = 0;

	for (int i = 0; i < 100000; i++)
		items.emplace_back(i, (long)i * 7);
	for (int round = 0; round < 1000; round++, calls++)
		acc.add(items);
	std::printf("add calls %lu (%ld)\n", calls, acc.total);
	return 0;
}
