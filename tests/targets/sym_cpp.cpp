/* sym_cpp.cpp: a C++ target for the symbolizer's demangling tests.
 *
 * Namespaces, methods, overloads, templates and an anonymous namespace, whose
 * addresses it prints ("0xADDR demangled-name" lines, then "end") before it
 * stops itself with SIGSTOP so a test can read its mappings.
 *
 * This is not a workload: it does nothing worth tracing.
 */
#include <csignal>
#include <cstdio>
#include <cstring>

volatile int sym_cpp_sink;

namespace ns {
struct Widget {
	int value;
	__attribute__((noinline)) int frob(int x);
	__attribute__((noinline)) int frob(double x);
};

int Widget::frob(int x)
{
	sym_cpp_sink += x;
	return value + x;
}

int Widget::frob(double x)
{
	sym_cpp_sink += (int)x;
	return value + (int)x;
}

template <typename T> __attribute__((noinline)) T twice(T x)
{
	sym_cpp_sink++;
	return x + x;
}

namespace inner {
__attribute__((noinline)) int free_func(const char *s)
{
	sym_cpp_sink++;
	return (int)std::strlen(s);
}
} // namespace inner
} // namespace ns

namespace {
__attribute__((noinline)) long hidden(long x)
{
	sym_cpp_sink++;
	return x * 3;
}
} // namespace

/* The code address behind a pointer to a non-virtual member function (on the
 * Itanium ABI, its first word). */
template <typename F> static void *code_of(F f)
{
	void *code;

	std::memcpy(&code, &f, sizeof(code));
	return code;
}

int main()
{
	ns::Widget w{ 1 };
	int (ns::Widget::*frob_int)(int) = &ns::Widget::frob;
	int (ns::Widget::*frob_double)(double) = &ns::Widget::frob;
	int (*twice_int)(int) = &ns::twice<int>;
	double (*twice_double)(double) = &ns::twice<double>;

	std::printf("%p ns::Widget::frob(int)\n", code_of(frob_int));
	std::printf("%p ns::Widget::frob(double)\n", code_of(frob_double));
	std::printf("%p int ns::twice<int>(int)\n", (void *)twice_int);
	std::printf("%p double ns::twice<double>(double)\n", (void *)twice_double);
	std::printf("%p ns::inner::free_func(char const*)\n", (void *)&ns::inner::free_func);
	std::printf("%p (anonymous namespace)::hidden(long)\n", (void *)&hidden);
	std::printf("end\n");
	std::fflush(stdout);
	std::raise(SIGSTOP);
	int sum = (w.*frob_int)(1) + (w.*frob_double)(2.0) + twice_int(3);

	sum += (int)twice_double(4.0) + ns::inner::free_func("x") + (int)hidden(5);
	return sum > 0 ? 0 : 1;
}
