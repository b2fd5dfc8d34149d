// Turns a title into a URL slug.
function slugify(text) {
}

module.exports = { slugify };
