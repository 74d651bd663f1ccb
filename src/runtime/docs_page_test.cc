// The /docs page of the recorded tesseract-core 1.15 documents: what it must
// show, that its example requests are usable, and that it escapes what it shows.
#include "runtime/docs_page.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/status_matchers.h"
#include "schema/validate.h"
#include "support/test_files.h"
#include "tesscpp/component.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/loader/component_library.h"

namespace tesscpp::runtime {
namespace {

using ::tesscpp::testing::DataPath;
using ::tesscpp::testing::ReadFile;

constexpr std::string_view kRefPrefix = "#/components/schemas/";

Value LoadDocument(const std::string& name) {
  Result<Value> document = ReadJson(ReadFile(DataPath("golden/runtime/" + name + ".openapi.json")));
  EXPECT_OK(document) << name << ": " << document.status();
  return document.ok() ? *document : Value();
}

// A component by $ref, following chains (ApplyOutputSchema -> Apply_OutputSchema).
const Value::Dict& Resolve(const Value& document, const Value::Dict& schema) {
  const Value::Dict* node = &schema;
  while (const Value* ref = node->find("$ref")) {
    const std::string name = ref->as_string().substr(kRefPrefix.size());
    node = &document.as_dict().at("components").as_dict().at("schemas").as_dict().at(name).as_dict();
  }
  return *node;
}

const Value::Dict& RequestSchema(const Value& document, const Value::Dict& op) {
  const Value& schema =
      op.at("requestBody").as_dict().at("content").as_dict().at("application/json").as_dict().at("schema");
  return Resolve(document, schema.as_dict());
}

std::vector<std::string> Required(const Value::Dict& schema) {
  std::vector<std::string> names;
  if (const Value* required = schema.find("required")) {
    for (const Value& name : required->as_list()) names.push_back(name.as_string());
  }
  return names;
}

std::string Unescape(std::string_view html) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}};
  std::string out;
  for (size_t i = 0; i < html.size();) {
    bool replaced = false;
    for (const auto& [entity, c] : kEntities) {
      if (html.substr(i, entity.size()) == entity) {
        out += c;
        i += entity.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += html[i++];
  }
  return out;
}

std::string Anchor(std::string_view method, std::string_view path) {
  std::string id(method);
  for (char c : path) id += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '-';
  return id;
}

// The example request shown for `method path`, parsed back from the page.
Result<Value> ExampleRequest(const std::string& page, std::string_view method, std::string_view path,
                             const JsonReadOptions& options = {}) {
  const std::string marker = "id=\"example-" + Anchor(method, path) + "\"><code>";
  const size_t start = page.find(marker);
  if (start == std::string::npos) return Status(StatusCode::kNotFound, "no example for " + std::string(path));
  const size_t end = page.find("</code>", start);
  return ReadJson(Unescape(std::string_view(page).substr(start + marker.size(), end - start - marker.size())),
                  options);
}

// Empty when every element but the void ones is closed, in order, and no raw
// '<' stands in text; else what is wrong. Style contents are skipped.
std::string CheckNesting(std::string_view html) {
  static constexpr std::string_view kVoid[] = {"meta", "br", "hr", "img", "input", "link"};
  std::vector<std::string> open;
  size_t at = 0;
  while ((at = html.find('<', at)) != std::string_view::npos) {
    const size_t end = html.find('>', at);
    if (end == std::string_view::npos) return "unterminated tag at " + std::to_string(at);
    if (html[at + 1] == '!') {  // doctype
      at = end + 1;
      continue;
    }
    const bool closing = html[at + 1] == '/';
    std::string name;
    for (size_t i = at + 1 + closing; i < end && std::isalnum(static_cast<unsigned char>(html[i])); ++i) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(html[i])));
    }
    if (name.empty()) return "raw '<' at " + std::to_string(at);
    at = end + 1;
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? "" : open.back()) + "> at " + std::to_string(at);
      }
      open.pop_back();
    } else if (std::find(std::begin(kVoid), std::end(kVoid), name) == std::end(kVoid)) {
      open.push_back(name);
      if (name == "style") at = html.find("</style", at);
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

class DocsPageGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    document_ = LoadDocument(GetParam());
    ASSERT_TRUE(document_.is_dict());
    page_ = RenderDocsPage(document_);
    // TESS_DOCS_PAGE_DIR=/tmp writes the pages out, to look at in a browser.
    if (const char* dir = std::getenv("TESS_DOCS_PAGE_DIR")) {
      std::ofstream(std::string(dir) + "/" + GetParam() + ".html") << page_;
    }
  }

  const Value::Dict& paths() const { return document_.as_dict().at("paths").as_dict(); }

  Value document_;
  std::string page_;
};

TEST_P(DocsPageGolden, IsWellFormed) {
  EXPECT_TRUE(page_.starts_with("<!doctype html>"));
  EXPECT_EQ(CheckNesting(page_), "");
  for (std::string_view tag : {"<html", "<head>", "<body>", "<main>", "</main>", "</body>", "</html>"}) {
    EXPECT_NE(page_.find(tag), std::string::npos) << tag;
  }
  // Self-contained: nothing is loaded from elsewhere.
  EXPECT_EQ(page_.find("<script"), std::string::npos);
  EXPECT_EQ(page_.find("src="), std::string::npos);
  EXPECT_EQ(page_.find("http"), std::string::npos);
}

TEST_P(DocsPageGolden, ShowsInfoAndSupportedLists) {
  const Value::Dict& info = document_.as_dict().at("info").as_dict();
  EXPECT_NE(page_.find("<h1>" + info.at("title").as_string() + "</h1>"), std::string::npos);
  EXPECT_NE(page_.find("Version <code>" + info.at("version").as_string() + "</code>"), std::string::npos);
  for (std::string_view key :
       {"x-supported-output-formats", "x-supported-gpu-transports", "x-supported-compressions"}) {
    std::string row;
    for (const Value& item : document_.as_dict().at(key).as_list())
      row += "<code>" + item.as_string() + "</code> ";
    EXPECT_NE(page_.find("<dd>" + row + "</dd>"), std::string::npos) << key;
  }
  EXPECT_NE(page_.find("<dt>Output formats</dt>"), std::string::npos);
  EXPECT_NE(page_.find("<dt>GPU transports</dt>"), std::string::npos);
}

TEST_P(DocsPageGolden, ShowsEveryEndpoint) {
  for (const auto& [path, item] : paths()) {
    for (const auto& [method, op] : item.as_dict()) {
      const std::string heading = "<section class=\"endpoint\" id=\"" + Anchor(method, path) +
                                  "\"><h2><span class=\"method " + method + "\">" + method + "</span><code>" +
                                  path + "</code><span class=\"summary\">" +
                                  op.as_dict().at("summary").as_string() + "</span></h2>";
      EXPECT_NE(page_.find(heading), std::string::npos) << heading;
    }
  }
}

// Every field of the apply inputs, and of the models nested in them (mesh), in
// the request part of /apply's section (outputs may share names with inputs).
TEST_P(DocsPageGolden, ShowsEveryInputField) {
  const size_t section = page_.find("<section class=\"endpoint\" id=\"post-apply\">");
  ASSERT_NE(section, std::string::npos);
  const std::string request =
      page_.substr(section, page_.find("<h3>Example request</h3>", section) - section);
  const Value::Dict& wrapper = RequestSchema(document_, paths().at("/apply").as_dict().at("post").as_dict());
  std::vector<const Value::Dict*> models = {
      &Resolve(document_, wrapper.at("properties").as_dict().at("inputs").as_dict())};
  int fields = 0;
  while (!models.empty()) {
    const Value::Dict& model = *models.back();
    models.pop_back();
    for (const auto& [name, field] : model.at("properties").as_dict()) {
      ++fields;
      EXPECT_NE(request.find("<td class=\"name\"><code>" + name + "</code></td>"), std::string::npos) << name;
      const Value::Dict& target = Resolve(document_, field.as_dict());
      if (target.contains("properties") && !target.contains("array_flags")) models.push_back(&target);
    }
  }
  EXPECT_GT(fields, 0);
}

TEST_P(DocsPageGolden, HasAParseableExampleWithTheRequiredFieldsPerPost) {
  int posts = 0;
  for (const auto& [path, item] : paths()) {
    const Value* post = item.as_dict().find("post");
    if (post == nullptr) continue;
    ++posts;
    Result<Value> example = ExampleRequest(page_, "post", path);
    ASSERT_OK(example) << path << ": " << example.status();
    ASSERT_TRUE(example->is_dict()) << path;
    const Value::Dict& schema = RequestSchema(document_, post->as_dict());
    for (const std::string& field : Required(schema)) {
      EXPECT_TRUE(example->as_dict().contains(field)) << path << " lacks " << field;
    }
    const Value* inputs = example->as_dict().find("inputs");
    ASSERT_NE(inputs, nullptr) << path;
    for (const std::string& field :
         Required(Resolve(document_, schema.at("properties").as_dict().at("inputs").as_dict()))) {
      EXPECT_TRUE(inputs->as_dict().contains(field)) << path << " lacks inputs." << field;
    }
  }
  size_t shown = 0;
  for (size_t at = 0; (at = page_.find("<pre class=\"example\"", at)) != std::string::npos; ++at) ++shown;
  EXPECT_EQ(shown, static_cast<size_t>(posts));
  EXPECT_GT(posts, 0);
}

// The recorded documents describe the example components; their apply
// example must pass the component's own input validation (model checks too).
TEST_P(DocsPageGolden, ApplyExampleValidatesAgainstTheComponent) {
  auto library = ComponentLibrary::Open(std::string(TESS_EXAMPLES_DIR) + "/lib" + GetParam() + ".so");
  ASSERT_OK(library);
  Result<Value> example = ExampleRequest(page_, "post", "/apply", {.arrays = ArrayDetection::kShaped});
  ASSERT_OK(example);
  Result<Value> valid =
      schema::ValidateModel(*(*library)->component().input_schema(), example->as_dict().at("inputs"));
  EXPECT_OK(valid);
}

INSTANTIATE_TEST_SUITE_P(Recorded, DocsPageGolden,
                         ::testing::Values("vectoradd", "univariate", "meshstats", "noop"));

TEST(DocsPage, ArrayLeavesShowDtypeShapeAndFlags) {
  const std::string mesh = RenderDocsPage(LoadDocument("meshstats"));
  EXPECT_NE(mesh.find("<code>array float32 [*, 3] (differentiable)</code>"), std::string::npos);
  EXPECT_NE(mesh.find("<code>array int32 [*]</code>"), std::string::npos);
  EXPECT_NE(mesh.find("<code>dict[str, array float32 [*, *]]</code>"), std::string::npos);
  EXPECT_NE(mesh.find("<code>array float32 [3] (differentiable)</code>"), std::string::npos);
  EXPECT_NE(mesh.find("<code>ShapeDType {shape, dtype}</code>"), std::string::npos);

  const std::string vectoradd = RenderDocsPage(LoadDocument("vectoradd"));
  EXPECT_NE(vectoradd.find("<code>array float32 scalar (differentiable)</code>"), std::string::npos);
  EXPECT_NE(vectoradd.find("<code>array float64 [*] (differentiable)</code>"), std::string::npos);
  EXPECT_NE(vectoradd.find("default <code>1</code>"), std::string::npos);
  EXPECT_NE(vectoradd.find("<code>list[&quot;a&quot; | &quot;b&quot; | &quot;s&quot;]</code>"),
            std::string::npos);

  // A dtype of None admits every dtype, complex ones included.
  const std::string noop = RenderDocsPage(LoadDocument("noop"));
  EXPECT_NE(noop.find("<code>array any-dtype [...]</code>"), std::string::npos);
}

TEST(DocsPage, ExampleArraysAreJsonArraydictsOfTheDeclaredShape) {
  const std::string page = RenderDocsPage(LoadDocument("meshstats"));
  Result<Value> example = ExampleRequest(page, "post", "/apply");
  ASSERT_OK(example);
  const Value::Dict& mesh = example->as_dict().at("inputs").as_dict().at("mesh").as_dict();
  const Value::Dict& points = mesh.at("points").as_dict();
  EXPECT_EQ(points.at("shape"), Value(Value::List{Value(1), Value(3)}));
  EXPECT_EQ(points.at("dtype"), Value("float32"));
  EXPECT_EQ(points.at("data").as_dict().at("encoding"), Value("json"));
  EXPECT_EQ(points.at("data").as_dict().at("buffer").as_list().size(), 3u);
  EXPECT_EQ(mesh.at("cell_connectivity").as_dict().at("dtype"), Value("int32"));
  EXPECT_TRUE(mesh.at("n_points").is_int());

  // The reader a server uses takes them for arrays.
  Result<Value> decoded = ExampleRequest(page, "post", "/apply", {.arrays = ArrayDetection::kShaped});
  ASSERT_OK(decoded);
  const Value& tensor = decoded->as_dict().at("inputs").as_dict().at("mesh").as_dict().at("points");
  ASSERT_TRUE(tensor.is_tensor());
  EXPECT_EQ(tensor.as_tensor().num_elements(), 3);

  // Defaults win: vectoradd's s defaults to 1, normalize to false.
  Result<Value> vectoradd = ExampleRequest(RenderDocsPage(LoadDocument("vectoradd")), "post", "/apply");
  ASSERT_OK(vectoradd);
  const Value::Dict& inputs = vectoradd->as_dict().at("inputs").as_dict();
  EXPECT_EQ(inputs.at("s"), Value(1));
  EXPECT_EQ(inputs.at("normalize"), Value(false));
  EXPECT_EQ(inputs.at("a").as_dict().at("shape"), inputs.at("b").as_dict().at("shape"));
}

TEST(DocsPage, GradientExamplesUseThePathLiteralsAndMatchingVectors) {
  const std::string page = RenderDocsPage(LoadDocument("univariate"));
  Result<Value> jacobian = ExampleRequest(page, "post", "/jacobian");
  ASSERT_OK(jacobian);
  EXPECT_EQ(jacobian->as_dict().at("jac_inputs"), Value(Value::List{Value("x"), Value("y")}));
  EXPECT_EQ(jacobian->as_dict().at("jac_outputs"), Value(Value::List{Value("result")}));

  Result<Value> jvp = ExampleRequest(page, "post", "/jacobian_vector_product");
  ASSERT_OK(jvp);
  const Value::Dict& tangent = jvp->as_dict().at("tangent_vector").as_dict();
  ASSERT_EQ(tangent.size(), 2u);
  for (const Value& name : jvp->as_dict().at("jvp_inputs").as_list()) {
    const Value* array = tangent.find(name.as_string());
    ASSERT_NE(array, nullptr) << name.as_string();
    EXPECT_EQ(array->as_dict().at("shape"), Value(Value::List{}));
    EXPECT_EQ(array->as_dict().at("dtype"), Value("float32"));
  }

  Result<Value> vjp = ExampleRequest(page, "post", "/vector_jacobian_product");
  ASSERT_OK(vjp);
  const Value::Dict& cotangent = vjp->as_dict().at("cotangent_vector").as_dict();
  ASSERT_EQ(cotangent.size(), 1u);
  EXPECT_TRUE(cotangent.contains("result"));

  Result<Value> mesh = ExampleRequest(RenderDocsPage(LoadDocument("meshstats")), "post", "/jacobian");
  ASSERT_OK(mesh);
  EXPECT_EQ(mesh->as_dict().at("jac_inputs"), Value(Value::List{Value("mesh.points")}));
}

TEST(DocsPage, AbstractExamplesTakeShapesFromTheApplyInputs) {
  Result<Value> mesh = ExampleRequest(RenderDocsPage(LoadDocument("meshstats")), "post", "/abstract_eval");
  ASSERT_OK(mesh);
  const Value::Dict& fields = mesh->as_dict().at("inputs").as_dict().at("mesh").as_dict();
  EXPECT_EQ(fields.at("points"), Value(Value::Dict{{"shape", Value(Value::List{Value(1), Value(3)})},
                                                   {"dtype", Value("float32")}}));
  EXPECT_EQ(fields.at("cell_connectivity").as_dict().at("dtype"), Value("int32"));

  // Where the schema has defaults (univariate's scalars) they stay.
  Result<Value> univariate =
      ExampleRequest(RenderDocsPage(LoadDocument("univariate")), "post", "/abstract_eval");
  ASSERT_OK(univariate);
  EXPECT_EQ(univariate->as_dict().at("inputs").as_dict().at("x"),
            Value(Value::Dict{{"shape", Value(Value::List{})}, {"dtype", Value("float32")}}));
}

TEST(DocsPage, EscapesEverythingTakenFromTheDocument) {
  Value document = LoadDocument("vectoradd");
  Value::Dict& root = document.as_dict();
  const std::string attack = "<script>alert('x')</script><img src=x onerror=alert(1)>\"";
  root.at("info").as_dict().set("title", Value(attack));
  root.at("info").as_dict().set("description", Value("Uses ``<b>code</b>`` and " + attack));
  root.at("info").as_dict().set("version", Value(attack));
  Value::Dict& schemas = root.at("components").as_dict().at("schemas").as_dict();
  Value::Dict& fields = schemas.at("Apply_InputSchema").as_dict().at("properties").as_dict();
  fields.at("normalize").as_dict().set("description", Value(attack));
  fields.at("normalize").as_dict().set("default", Value(attack));
  fields.set(attack, Value::Dict{{"type", Value("string")}, {"title", Value(attack)}});
  root.at("x-supported-compressions").as_list().emplace_back(attack);
  Value::Dict& paths = root.at("paths").as_dict();
  Value::Dict& apply = paths.at("/apply").as_dict().at("post").as_dict();
  apply.set("summary", Value(attack));
  paths.set("/\"><svg onload=alert(1)>", Value::Dict{{"post", Value(apply)}});

  const std::string page = RenderDocsPage(document);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<svg"), std::string::npos);
  EXPECT_EQ(page.find("<b>code"), std::string::npos);
  EXPECT_NE(page.find("<code>&lt;b&gt;code&lt;/b&gt;</code>"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(CheckNesting(page), "");
  // The example still parses, the hostile field name included.
  Result<Value> example = ExampleRequest(page, "post", "/apply");
  ASSERT_OK(example);
  EXPECT_TRUE(example->as_dict().at("inputs").as_dict().contains(attack));
}

TEST(DocsPage, SyntheticSchemasRenderAndTerminate) {
  Result<Value> document = ReadJson(R"({
    "info": {"title": "tree", "version": "1"},
    "paths": {"/apply": {"post": {"summary": "Apply",
      "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}},
      "responses": {"200": {"description": "ok",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Missing"}}}}}}}},
    "components": {"schemas": {
      "Node": {"type": "object", "title": "Node", "required": ["value"], "properties": {
        "value": {"type": "integer", "minimum": 3},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.25},
        "field": {"array_flags": [], "type": "object", "properties": {
          "shape": {"type": "array", "prefixItems": [{"const": 1000}, {"const": 1000}], "minItems": 2, "maxItems": 2},
          "dtype": {"const": "float64"}, "data": {}}},
        "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
        "loop": {"$ref": "#/components/schemas/Loop"}}},
      "Loop": {"$ref": "#/components/schemas/Loop"}}}})");
  ASSERT_OK(document);
  const std::string page = RenderDocsPage(*document);
  EXPECT_EQ(CheckNesting(page), "");
  EXPECT_NE(page.find("<code>list[Node]</code>"), std::string::npos);
  EXPECT_NE(page.find("Type: <code>Missing</code>"), std::string::npos);
  Result<Value> example = ExampleRequest(page, "post", "/apply");
  ASSERT_OK(example);
  EXPECT_EQ(example->as_dict().at("value"), Value(3));
  EXPECT_EQ(example->as_dict().at("ratio"), Value(0.25));
  // A million numbers would swamp the page; size-1 axes broadcast instead.
  EXPECT_NE(page.find("<code>array float64 [1000, 1000]</code>"), std::string::npos);
  EXPECT_EQ(example->as_dict().at("field").as_dict().at("shape"), Value(Value::List{Value(1), Value(1)}));

  // Not even a document: still a page.
  EXPECT_EQ(CheckNesting(RenderDocsPage(Value("nonsense"))), "");
}

TEST(DocsPage, DocstringsBecomeParagraphsWithInlineCode) {
  const std::string page = RenderDocsPage(LoadDocument("vectoradd"));
  EXPECT_NE(page.find("<p>Apply the Tesseract to the input data.</p><p>Multiplies a vector <code>a</code> by "
                      "<code>s</code>, and sums the result to <code>b</code>.</p>"),
            std::string::npos);
  EXPECT_NE(
      page.find("<p>Differentiates <code>jac_outputs</code> with respect to <code>jac_inputs</code>, at "
                "the point <code>inputs</code>.</p>"),
      std::string::npos);
}

}  // namespace
}  // namespace tesscpp::runtime
