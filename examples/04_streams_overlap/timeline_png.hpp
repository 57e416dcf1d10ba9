// SPDX-License-Identifier: Apache-2.0
// A tiny PNG writer for the timeline picture of example 04: an RGB canvas,
// filled rectangles, text in a built-in 5x7 font, and write_png() -- zlib
// stream with fixed-Huffman deflate (runs of equal bytes as distance-1
// matches) over rows filtered with PNG's "Up" filter. No libraries needed, so
// the example runs on a GPU machine without Python or matplotlib.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace timeline {

struct rgb {
  std::uint8_t r, g, b;
};

class canvas {
 public:
  canvas(int w, int h, rgb background) : w_(w), h_(h), px_(static_cast<std::size_t>(w) * h * 3) {
    fill(0, 0, w, h, background);
  }
  int width() const { return w_; }
  int height() const { return h_; }

  void fill(int x0, int y0, int x1, int y1, rgb c) {
    for (int y = std::max(0, y0); y < std::min(h_, y1); ++y)
      for (int x = std::max(0, x0); x < std::min(w_, x1); ++x) set(x, y, c);
  }

  /// Text in a 5x7 font, `scale` pixels per font pixel; lower case is drawn as upper case.
  void text(int x, int y, const std::string& s, rgb c, int scale = 2) {
    for (char ch : s) {
      const char* g = glyph(static_cast<char>(std::toupper(static_cast<unsigned char>(ch))));
      for (int row = 0; row < 7 && g; ++row)
        for (int col = 0; col < 5; ++col)
          if (g[row * 5 + col] == '#')
            fill(x + col * scale, y + row * scale, x + (col + 1) * scale, y + (row + 1) * scale, c);
      x += 6 * scale;
    }
  }
  static int text_width(const std::string& s, int scale = 2) { return static_cast<int>(s.size()) * 6 * scale; }

  bool write_png(const std::string& path) const;

 private:
  void set(int x, int y, rgb c) {
    std::uint8_t* p = &px_[(static_cast<std::size_t>(y) * w_ + x) * 3];
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }
  static const char* glyph(char c);
  int w_, h_;
  std::vector<std::uint8_t> px_;
};

inline const char* canvas::glyph(char c) {
  struct entry {
    char c;
    const char* rows;
  };
  static const entry font[] = {
      {'A', ".###.#...##...#######...##...##...#"}, {'B', "####.#...##...#####.#...##...#####."},
      {'C', ".###.#...##....#....#....#...#.###."}, {'D', "####.#...##...##...##...##...#####."},
      {'E', "######....#....####.#....#....#####"}, {'F', "######....#....####.#....#....#...."},
      {'G', ".###.#...##....#.####...##...#.####"}, {'H', "#...##...##...#######...##...##...#"},
      {'I', ".###...#....#....#....#....#...###."}, {'J', "..###...#....#....#....#.#..#..##.."},
      {'K', "#...##..#.#.#..##...#.#..#..#.#...#"}, {'L', "#....#....#....#....#....#....#####"},
      {'M', "#...###.###.#.##.#.##...##...##...#"}, {'N', "#...##...###..##.#.##..###...##...#"},
      {'O', ".###.#...##...##...##...##...#.###."}, {'P', "####.#...##...#####.#....#....#...."},
      {'Q', ".###.#...##...##...##.#.##..#..##.#"}, {'R', "####.#...##...#####.#.#..#..#.#...#"},
      {'S', ".#####....#.....###.....#....#####."}, {'T', "#####..#....#....#....#....#....#.."},
      {'U', "#...##...##...##...##...##...#.###."}, {'V', "#...##...##...##...##...#.#.#...#.."},
      {'W', "#...##...##...##.#.##.#.##.#.#.#.#."}, {'X', "#...##...#.#.#...#...#.#.#...##...#"},
      {'Y', "#...##...#.#.#...#....#....#....#.."}, {'Z', "#####....#...#...#...#...#....#####"},
      {'0', ".###.#...##..###.#.###..##...#.###."}, {'1', "..#...##....#....#....#....#...###."},
      {'2', ".###.#...#....#...#...#...#...#####"}, {'3', "#####...#...#.....#.....##...#.###."},
      {'4', "...#...##..#.#.#..#.#####...#....#."}, {'5', "######....####.....#....##...#.###."},
      {'6', "..##..#...#....####.#...##...#.###."}, {'7', "#####....#...#...#...#....#....#..."},
      {'8', ".###.#...##...#.###.#...##...#.###."}, {'9', ".###.#...##...#.####....#...#..##.."},
      {'.', "..........................##...##.."}, {',', "......................##...#...#..."},
      {':', "......##...##........##...##......."}, {'-', "...............#####..............."},
      {'(', "...#...#...#....#....#.....#.....#."}, {')', ".#.....#.....#....#....#...#...#..."},
      {'/', ".........#...#...#...#...#........."}, {'%', "##...##..#...#...#...#...#..##...##"},
      {'=', "..........#####.....#####.........."}, {'+', ".......#....#..#####..#....#......."},
  };
  for (const entry& e : font)
    if (e.c == c) return e.rows;
  return nullptr;  // space and anything unknown: blank
}

namespace detail {

inline std::uint32_t crc32(const std::uint8_t* p, std::size_t n, std::uint32_t crc = 0) {
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

/// LSB-first bit writer, as deflate wants; Huffman codes go in MSB-first.
struct bit_writer {
  std::vector<std::uint8_t> out;
  std::uint32_t acc = 0;
  int bits = 0;
  void put(std::uint32_t value, int n) {  // value's low n bits, LSB first
    for (int i = 0; i < n; ++i) {
      acc |= ((value >> i) & 1u) << bits;
      if (++bits == 8) out.push_back(static_cast<std::uint8_t>(acc)), acc = 0, bits = 0;
    }
  }
  void code(std::uint32_t code, int n) {  // a Huffman code, MSB first
    for (int i = n - 1; i >= 0; --i) put((code >> i) & 1u, 1);
  }
  void flush() {
    if (bits) out.push_back(static_cast<std::uint8_t>(acc)), acc = 0, bits = 0;
  }
};

inline void literal_or_length(bit_writer& w, int symbol) {  // fixed Huffman code of a lit/len symbol
  if (symbol < 144)
    w.code(0x30 + symbol, 8);
  else if (symbol < 256)
    w.code(0x190 + symbol - 144, 9);
  else if (symbol < 280)
    w.code(symbol - 256, 7);
  else
    w.code(0xC0 + symbol - 280, 8);
}

inline void match(bit_writer& w, int length) {  // length 3..258 at distance 1
  static const int base[] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                             31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  static const int extra[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  int i = 28;
  while (base[i] > length) --i;
  literal_or_length(w, 257 + i);
  w.put(static_cast<std::uint32_t>(length - base[i]), extra[i]);
  w.code(0, 5);  // distance code 0 = distance 1, no extra bits
}

inline std::vector<std::uint8_t> zlib_compress(const std::vector<std::uint8_t>& data) {
  bit_writer w;
  w.out = {0x78, 0x01};
  w.put(1, 1);  // BFINAL
  w.put(1, 2);  // BTYPE = 01, fixed Huffman
  std::size_t i = 0;
  while (i < data.size()) {
    std::size_t run = 0;
    if (i > 0)
      while (i + run < data.size() && run < 258 && data[i + run] == data[i - 1]) ++run;
    if (run >= 3) {
      match(w, static_cast<int>(run));
      i += run;
    } else {
      literal_or_length(w, data[i++]);
    }
  }
  literal_or_length(w, 256);  // end of block
  w.flush();
  std::uint32_t a = 1, b = 0;
  for (std::uint8_t byte : data) a = (a + byte) % 65521, b = (b + a) % 65521;
  const std::uint32_t adler = (b << 16) | a;
  for (int s = 24; s >= 0; s -= 8) w.out.push_back(static_cast<std::uint8_t>(adler >> s));
  return w.out;
}

inline void chunk(std::FILE* f, const char* type, const std::vector<std::uint8_t>& body) {
  const std::uint32_t n = static_cast<std::uint32_t>(body.size());
  const std::uint8_t len[4] = {std::uint8_t(n >> 24), std::uint8_t(n >> 16), std::uint8_t(n >> 8), std::uint8_t(n)};
  std::fwrite(len, 1, 4, f);
  std::vector<std::uint8_t> typed(type, type + 4);
  typed.insert(typed.end(), body.begin(), body.end());
  std::fwrite(typed.data(), 1, typed.size(), f);
  const std::uint32_t crc = crc32(typed.data(), typed.size());
  const std::uint8_t c[4] = {std::uint8_t(crc >> 24), std::uint8_t(crc >> 16), std::uint8_t(crc >> 8),
                             std::uint8_t(crc)};
  std::fwrite(c, 1, 4, f);
}

}  // namespace detail

inline bool canvas::write_png(const std::string& path) const {
  std::vector<std::uint8_t> raw;
  const std::size_t stride = static_cast<std::size_t>(w_) * 3;
  raw.reserve((stride + 1) * h_);
  for (int y = 0; y < h_; ++y) {  // filter 2 ("Up"): each byte minus the byte above
    raw.push_back(2);
    for (std::size_t x = 0; x < stride; ++x) {
      const std::uint8_t above = y ? px_[(y - 1) * stride + x] : 0;
      raw.push_back(static_cast<std::uint8_t>(px_[y * stride + x] - above));
    }
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  static const std::uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::fwrite(signature, 1, 8, f);
  const std::uint32_t w = static_cast<std::uint32_t>(w_), h = static_cast<std::uint32_t>(h_);
  detail::chunk(f, "IHDR",
                {std::uint8_t(w >> 24), std::uint8_t(w >> 16), std::uint8_t(w >> 8), std::uint8_t(w),
                 std::uint8_t(h >> 24), std::uint8_t(h >> 16), std::uint8_t(h >> 8), std::uint8_t(h), 8, 2, 0, 0,
                 0});  // 8-bit RGB, deflate, no interlace
  detail::chunk(f, "IDAT", detail::zlib_compress(raw));
  detail::chunk(f, "IEND", {});
  return std::fclose(f) == 0;
}

}  // namespace timeline
