// A tiny pybind11 module the DAP tests compile with -g -O0: a method called from Python
// and from C++, a C++ loop that calls back into Python. Lines are found by the marker
// comments, never by number.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

struct Point {
    double x;
    double y;
};

class Polygon {
public:
    Polygon(std::string name, const std::vector<std::pair<double, double>> &corners) : name(std::move(name))
    {
        for (const auto &corner : corners) {
            points.push_back(Point{corner.first, corner.second});
            xs.push_back(corner.first);
            ys.push_back(corner.second);
        }
    }

    double area() const
    {
        double twice = 0.0; /* @area */
        for (std::size_t i = 0; i < points.size(); ++i) {
            const Point &a = points[i];
            const Point &b = points[(i + 1) % points.size()];
            twice += a.x * b.y - b.x * a.y; /* @shoelace */
        }
        return std::fabs(twice) / 2.0; /* @area_return */
    }

    std::string name;
    std::vector<Point> points;
    std::vector<double> xs, ys; // the corners' coordinates: libstdc++ in expressions
};

double total_area(const std::vector<Polygon> &polys, const py::function &scale)
{
    double total = 0.0; /* @total_start */
    for (const Polygon &p : polys) {
        double a = p.area(); /* @total_loop */
        total += scale(a).cast<double>(); /* @total_scale */
    }
    return total; /* @total_return */
}

PYBIND11_MODULE(geom, m)
{
    py::class_<Polygon>(m, "Polygon")
        .def(py::init<std::string, const std::vector<std::pair<double, double>> &>())
        .def("area", &Polygon::area)
        .def_readonly("name", &Polygon::name);
    m.def("total_area", &total_area, "Sum scale(p.area()) over the polygons.");
}
